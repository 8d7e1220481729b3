// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package ring

import (
	"context"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/cpu"
)

// SPSC is a bounded queue for exactly one producer goroutine and one
// consumer goroutine at a time. TryEnqueue and Enqueue must not run
// concurrently with each other, nor TryDequeue and Dequeue; Len, Cap and
// Close may be called from anywhere.
//
// With a single goroutine per side no reservation is needed: the producer
// owns the slots [prodTail, consHead+capacity), fills them and publishes
// with one atomic operation on prodTail; the consumer owns
// [consHead, prodTail), empties them and releases them with one store to
// consHead. Each side also keeps a private copy of the other side's index
// and reloads it only when the copy shows too little room or too few items
// (a well-known refinement of Lamport's single-producer single-consumer
// queue; E. Rigtorp's SPSCQueue calls these readIdxCache and
// writeIdxCache), so in steady state a burst reads the other side's cache
// line at most once.
type SPSC[T any] struct {
	_ cpu.CacheLinePad
	// Producer line. prodTail is written by the producer (and closedBit by
	// Close), read by the consumer. cachedConsHead is producer-private.
	prodTail       atomic.Uint64
	cachedConsHead uint64
	_              cpu.CacheLinePad
	// Consumer line. consHead is written by the consumer, read by the
	// producer. cachedProdTail is consumer-private.
	consHead       atomic.Uint64
	cachedProdTail uint64
	_              cpu.CacheLinePad
	// Read-mostly state, as in MPMC.
	slots    []T
	mask     uint64
	notEmpty waitQueue
	notFull  waitQueue
	done     chan struct{}
	close    sync.Once
	_        cpu.CacheLinePad
}

// NewSPSC returns an empty ring with room for capacity items, rounded up to
// a power of two. It panics if capacity < 1 or capacity > 1<<30.
func NewSPSC[T any](capacity int) *SPSC[T] {
	n := roundCapacity(capacity)
	return &SPSC[T]{
		slots:    make([]T, n),
		mask:     n - 1,
		notEmpty: newWaitQueue(),
		notFull:  newWaitQueue(),
		done:     make(chan struct{}),
	}
}

// Cap returns the number of slots.
func (r *SPSC[T]) Cap() int { return len(r.slots) }

// Len returns the number of items enqueued and not yet dequeued; a snapshot
// under concurrent use.
func (r *SPSC[T]) Len() int {
	// consHead first, as in MPMC.Len.
	head := r.consHead.Load()
	tail := r.prodTail.Load() &^ closedBit
	return int(min(tail-head, r.mask+1))
}

// TryEnqueue adds as many items from the front of vs as there is room for,
// in order and without blocking, and returns how many it added. After Close
// it adds none. Producer side only.
func (r *SPSC[T]) TryEnqueue(vs []T) int {
	if len(vs) == 0 {
		return 0
	}
	capacity := r.mask + 1
	// Only this goroutine moves prodTail (Close only sets closedBit).
	tail := r.prodTail.Load()
	if tail&closedBit != 0 {
		return 0
	}
	if tail-r.cachedConsHead+uint64(len(vs)) > capacity {
		// Load-acquire of consHead; pairs with the store-release of consHead
		// in TryDequeue: the consumer has finished with every slot below it.
		r.cachedConsHead = r.consHead.Load()
	}
	n := min(uint64(len(vs)), capacity-(tail-r.cachedConsHead))
	if n == 0 {
		return 0
	}
	copyIn(r.slots, r.mask, tail, vs[:n])
	// Store-release of prodTail, as a compare-and-swap so that it fails if
	// Close set closedBit meanwhile; pairs with the load-acquire of prodTail
	// in TryDequeue, publishing the items in [tail, tail+n). A failure means
	// the items were never visible to the consumer, so they are not in.
	if !r.prodTail.CompareAndSwap(tail, tail+n) {
		clearRange(r.slots, r.mask, tail, n)
		return 0
	}
	r.notEmpty.wake()
	return int(n)
}

// TryDequeue moves as many items as are available, up to len(out), into
// the front of out without blocking, and returns how many it moved.
// Consumer side only.
func (r *SPSC[T]) TryDequeue(out []T) int {
	if len(out) == 0 {
		return 0
	}
	// Only this goroutine moves consHead.
	head := r.consHead.Load()
	if r.cachedProdTail-head < uint64(len(out)) {
		// Load-acquire of prodTail; pairs with the store-release
		// (compare-and-swap) of prodTail in TryEnqueue: the items below it
		// are fully written.
		r.cachedProdTail = r.prodTail.Load() &^ closedBit
	}
	n := min(uint64(len(out)), r.cachedProdTail-head)
	if n == 0 {
		return 0
	}
	copyOut(r.slots, r.mask, head, out[:n])
	// Store-release of consHead; pairs with the load-acquire of consHead in
	// TryEnqueue: our reads and clears of [head, head+n) happen before the
	// producer reuses those slots.
	r.consHead.Store(head + n)
	r.notFull.wake()
	return int(n)
}

// Enqueue adds all of vs in order, waiting for room as needed. It returns
// ErrClosed if the ring is closed before all of vs is in; a prefix of vs may
// then have been enqueued. Producer side only.
func (r *SPSC[T]) Enqueue(vs []T) error {
	return r.EnqueueContext(context.Background(), vs)
}

// EnqueueContext is Enqueue that gives up with ctx.Err() when ctx is done
// while it waits.
func (r *SPSC[T]) EnqueueContext(ctx context.Context, vs []T) error {
	// One producer and one consumer: a woken side has nobody to pass the wake-up on to, unlike MPMC.
	for {
		n := r.TryEnqueue(vs)
		vs = vs[n:]
		if len(vs) == 0 {
			return nil
		}
		if r.closed() {
			return ErrClosed
		}
		if _, err := r.notFull.pause(ctx, r.writableOrClosed, r.done); err != nil {
			return err
		}
	}
}

// Dequeue moves at least one and at most len(out) items into out, waiting
// until one is available. Once the ring is closed it keeps returning the
// remaining items, then 0 and ErrClosed. With len(out) == 0 it returns 0 and
// nil at once. Consumer side only.
func (r *SPSC[T]) Dequeue(out []T) (int, error) {
	return r.DequeueContext(context.Background(), out)
}

// DequeueContext is Dequeue that gives up with ctx.Err() when ctx is done
// while it waits.
func (r *SPSC[T]) DequeueContext(ctx context.Context, out []T) (int, error) {
	if len(out) == 0 {
		return 0, nil
	}
	for {
		if n := r.TryDequeue(out); n > 0 {
			return n, nil
		}
		if r.drained() {
			return 0, ErrClosed
		}
		if _, err := r.notEmpty.pause(ctx, r.readableOrClosed, r.done); err != nil {
			return 0, err
		}
	}
}

// Close stops the ring accepting items and wakes the waiting goroutines.
// Items enqueued before Close stay available to Dequeue. Close may be called
// more than once and from any goroutine.
func (r *SPSC[T]) Close() {
	r.close.Do(func() {
		// Atomic read-modify-write on prodTail; orders Close against the
		// producer's publishing compare-and-swap, which then fails.
		r.prodTail.Or(closedBit)
		close(r.done)
	})
}

func (r *SPSC[T]) closed() bool { return r.prodTail.Load()&closedBit != 0 }

func (r *SPSC[T]) readable() bool { return r.prodTail.Load()&^closedBit != r.consHead.Load() }

func (r *SPSC[T]) writable() bool {
	return (r.prodTail.Load()&^closedBit)-r.consHead.Load() < r.mask+1
}

func (r *SPSC[T]) readableOrClosed() bool { return r.readable() || r.closed() }
func (r *SPSC[T]) writableOrClosed() bool { return r.writable() || r.closed() }

// drained reports whether the ring is closed and empty. With the publishing
// compare-and-swap failing after Close, nothing can be added once this holds.
func (r *SPSC[T]) drained() bool {
	tail := r.prodTail.Load()
	return tail&closedBit != 0 && r.consHead.Load() == tail&^closedBit
}
