package ring

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/cpu"
)

// MPMC is a bounded queue for any number of producers and consumers.
//
// The algorithm is DPDK's multi-producer/multi-consumer rte_ring. Each side
// has a head and a tail index. A producer reserves slots
// [prodHead, prodHead+n) with one compare-and-swap on prodHead, copies its
// items in, waits until every earlier reservation is published (prodTail
// reaches its start), then publishes with one store to prodTail. Consumers do
// the same with consHead and consTail. So a burst of any size costs two
// atomic loads, one compare-and-swap and one store, plus one load to see
// whether the other side is parked.
//
// Slot ownership, by index (all indexes free-running, slot = index & mask):
//
//	[consTail, consHead)  being copied out by consumers
//	[consHead, prodTail)  published items, free for consumers to reserve
//	[prodTail, prodHead)  being copied in by producers
//	[prodHead, consTail+capacity)  free slots, producers may reserve
//
// and consTail <= consHead <= prodTail <= prodHead <= consTail+capacity.
// Exactly one goroutine owns a slot in the first and third ranges, and only
// it reads or writes that slot.
//
// A producer or consumer that is descheduled between its reservation and its
// publication holds up the publications of later reservations on its side;
// they yield while they wait (the known cost of this design, see the DPDK
// Programmer's Guide, "Ring Library", on preemptible producers).
type MPMC[T any] struct {
	_ cpu.CacheLinePad
	// Producer indexes, written by producers, read by consumers once per
	// burst. prodHead also carries closedBit.
	prodHead atomic.Uint64
	prodTail atomic.Uint64
	_        cpu.CacheLinePad
	// Consumer indexes, written by consumers, read by producers once per
	// burst.
	consHead atomic.Uint64
	consTail atomic.Uint64
	_        cpu.CacheLinePad
	// Read-mostly state: set at construction, except the waiter counts
	// (written only when a goroutine parks).
	slots    []T
	mask     uint64
	notEmpty waitQueue // consumers waiting for items
	notFull  waitQueue // producers waiting for room
	done     chan struct{}
	close    sync.Once
	_        cpu.CacheLinePad
}

// NewMPMC returns an empty ring with room for capacity items, rounded up to
// a power of two. It panics if capacity < 1.
func NewMPMC[T any](capacity int) *MPMC[T] {
	n := roundCapacity(capacity)
	return &MPMC[T]{
		slots:    make([]T, n),
		mask:     n - 1,
		notEmpty: newWaitQueue(),
		notFull:  newWaitQueue(),
		done:     make(chan struct{}),
	}
}

// Cap returns the number of slots.
func (r *MPMC[T]) Cap() int { return len(r.slots) }

// Len returns the number of items published and not yet reserved by a
// consumer. Under concurrent use it is a snapshot that may be stale as soon
// as it returns.
func (r *MPMC[T]) Len() int {
	// Load the consumer index first: prodTail only grows and never passes
	// the later value of consHead from below, so the difference is >= 0.
	head := r.consHead.Load()
	tail := r.prodTail.Load()
	return int(min(tail-head, r.mask+1))
}

// TryEnqueue adds as many items from the front of vs as there is room for,
// in order and without blocking, and returns how many it added. After Close
// it adds none. Safe for concurrent use.
func (r *MPMC[T]) TryEnqueue(vs []T) int {
	if len(vs) == 0 {
		return 0
	}
	capacity := r.mask + 1
	head := r.prodHead.Load()
	var n uint64
	for {
		if head&closedBit != 0 {
			return 0
		}
		// Load-acquire of consTail; pairs with the store-release of consTail
		// in TryDequeue: every slot below it has been read and cleared by its
		// consumer, so it may be overwritten.
		free := capacity - (head - r.consTail.Load())
		// If head is stale, free is garbage, but then the compare-and-swap
		// below fails. If it succeeds, head was current, and
		// consTail <= head <= consTail+capacity held when consTail was read.
		n = min(uint64(len(vs)), free)
		if n == 0 {
			return 0
		}
		// Reserve [head, head+n). Fails if another producer reserved first
		// or Close set closedBit. No ordering is needed for the slots here:
		// the acquire above already covers them.
		if r.prodHead.CompareAndSwap(head, head+n) {
			break
		}
		head = r.prodHead.Load()
	}
	copyIn(r.slots, r.mask, head, vs[:n])
	// Publish in reservation order: wait until the producers that reserved
	// before us have published. Load-acquire of prodTail; pairs with their
	// store-release below.
	waitTurn(&r.prodTail, head)
	// Store-release of prodTail; pairs with the load-acquire of prodTail in
	// TryDequeue (and in waitTurn of the next producer): the items copied
	// into [head, head+n) are visible to whoever sees the new tail.
	r.prodTail.Store(head + n)
	r.notEmpty.wake()
	return int(n)
}

// TryDequeue moves as many items as are available, up to len(out), into
// the front of out without blocking, and returns how many it moved. Safe for
// concurrent use.
func (r *MPMC[T]) TryDequeue(out []T) int {
	if len(out) == 0 {
		return 0
	}
	head := r.consHead.Load()
	var n uint64
	for {
		// Load-acquire of prodTail; pairs with the store-release of prodTail
		// in TryEnqueue: the items in [head, prodTail) are fully written.
		// prodTail is loaded after head and prodTail >= consHead always, so
		// the difference does not wrap.
		n = min(uint64(len(out)), r.prodTail.Load()-head)
		if n == 0 {
			return 0
		}
		// Reserve [head, head+n) against other consumers.
		if r.consHead.CompareAndSwap(head, head+n) {
			break
		}
		head = r.consHead.Load()
	}
	copyOut(r.slots, r.mask, head, out[:n])
	// Load-acquire of consTail; pairs with the store-release of the
	// consumers that reserved before us.
	waitTurn(&r.consTail, head)
	// Store-release of consTail; pairs with the load-acquire of consTail in
	// TryEnqueue: our reads (and clears) of [head, head+n) are done before a
	// producer can reserve these slots again.
	r.consTail.Store(head + n)
	r.notFull.wake()
	return int(n)
}

// Enqueue adds all of vs in order, waiting for room as needed. It returns
// ErrClosed if the ring is closed before all of vs is in; a prefix of vs may
// then have been enqueued. Safe for concurrent use, but the bursts of
// concurrent producers may interleave.
func (r *MPMC[T]) Enqueue(vs []T) error {
	return r.EnqueueContext(context.Background(), vs)
}

// EnqueueContext is Enqueue that gives up with ctx.Err() when ctx is done
// while it waits.
func (r *MPMC[T]) EnqueueContext(ctx context.Context, vs []T) error {
	parked := false
	for try := 0; ; try++ {
		n := r.TryEnqueue(vs)
		vs = vs[n:]
		if n > 0 {
			try = 0
			// Chain wake-up: a parked producer woken by the one pending
			// token passes it on while room remains for the others.
			if parked && r.writable() {
				r.notFull.wake()
			}
		}
		if len(vs) == 0 {
			return nil
		}
		if r.closed() {
			return ErrClosed
		}
		parked = try >= spinTries
		if err := r.notFull.pause(ctx, try, r.writableOrClosed, r.done); err != nil {
			return err
		}
	}
}

// Dequeue moves at least one and at most len(out) items into out, waiting
// until one is available. Once the ring is closed it keeps returning the
// remaining items, then 0 and ErrClosed. With len(out) == 0 it returns 0 and
// nil at once. Safe for concurrent use.
func (r *MPMC[T]) Dequeue(out []T) (int, error) {
	return r.DequeueContext(context.Background(), out)
}

// DequeueContext is Dequeue that gives up with ctx.Err() when ctx is done
// while it waits.
func (r *MPMC[T]) DequeueContext(ctx context.Context, out []T) (int, error) {
	if len(out) == 0 {
		return 0, nil
	}
	parked := false
	for try := 0; ; try++ {
		if n := r.TryDequeue(out); n > 0 {
			// Chain wake-up: a parked consumer woken by the one pending
			// token passes it on while items remain for the others.
			if parked && r.readable() {
				r.notEmpty.wake()
			}
			return n, nil
		}
		if r.drained() {
			return 0, ErrClosed
		}
		parked = try >= spinTries
		if err := r.notEmpty.pause(ctx, try, r.readableOrClosed, r.done); err != nil {
			return 0, err
		}
	}
}

// Close stops the ring accepting items and wakes every waiting goroutine.
// Items enqueued before Close stay available to Dequeue. Close may be called
// more than once and concurrently with any other method.
func (r *MPMC[T]) Close() {
	r.close.Do(func() {
		// Atomic read-modify-write on prodHead; orders Close against every
		// producer's reservation compare-and-swap: a reservation either
		// precedes this (its items will be published and drained) or fails.
		r.prodHead.Or(closedBit)
		close(r.done)
	})
}

func (r *MPMC[T]) closed() bool { return r.prodHead.Load()&closedBit != 0 }

// readable reports whether there are published items no consumer reserved.
func (r *MPMC[T]) readable() bool { return r.prodTail.Load() != r.consHead.Load() }

// writable reports whether producers could reserve a slot.
func (r *MPMC[T]) writable() bool {
	return (r.prodHead.Load()&^closedBit)-r.consTail.Load() < r.mask+1
}

func (r *MPMC[T]) readableOrClosed() bool { return r.readable() || r.closed() }
func (r *MPMC[T]) writableOrClosed() bool { return r.writable() || r.closed() }

// drained reports whether the ring is closed and every reserved item has
// been reserved by a consumer. Items reserved by producers before Close count
// as not drained until they are dequeued.
func (r *MPMC[T]) drained() bool {
	head := r.prodHead.Load()
	return head&closedBit != 0 && r.consHead.Load() == head&^closedBit
}

// waitTurn waits until *tail reaches pos, the start of the caller's
// reservation, that is, until every earlier reservation on the same side
// has been published.
func waitTurn(tail *atomic.Uint64, pos uint64) {
	for try := 0; tail.Load() != pos; try++ {
		// The earlier reservation is usually being copied on another core
		// and completes within nanoseconds; if its goroutine was preempted,
		// only yielding lets it finish.
		if try >= 4 {
			runtime.Gosched()
		}
	}
}
