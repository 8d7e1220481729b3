// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

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
// The algorithm is DPDK's rte_ring in its "relaxed tail sync" (RTS) mode
// (DPDK Programmer's Guide, "Ring Library", section "Producer/consumer
// synchronization modes"; lib/ring/rte_ring_rts_elem_pvt.h). Each side has a
// head and a tail, and each is one 64-bit word holding a 32-bit free-running
// position and a count of operations. A producer reserves slots
// [head.pos, head.pos+n) and counts itself in with one compare-and-swap on
// prodHead, copies its items in, then counts itself out with one
// compare-and-swap on prodTail. Whoever brings the tail's count level with
// the head's count, so that no reservation is in flight, also moves the
// tail's position up to the head's, publishing everything reserved so far.
// Consumers do the same with consHead and consTail. A burst of any size
// costs two compare-and-swaps and a few loads.
//
// Unlike the classic mode, where each producer waits for the earlier ones
// to publish before it publishes, nobody waits while holding a reservation.
// That matters for goroutines: with more goroutines than processors, a
// goroutine that yields while holding a reservation (or is preempted)
// blocks every later one, and convoys form that cost microseconds per
// item. Here the only wait happens before reserving: a
// side's head may run at most capacity/8 slots ahead of its tail (DPDK's
// default "htd_max"), so that continuous overlapping operations cannot keep
// the tail from catching up forever.
//
// Slot ownership, by position (slot = pos & mask):
//
//	[consTail, consHead)  reserved by consumers: being copied out, or copied
//	                      and waiting for the tail to catch up
//	[consHead, prodTail)  published items, free for consumers to reserve
//	[prodTail, prodHead)  reserved by producers: being copied in, or copied
//	                      and waiting for the tail to catch up
//	[prodHead, consTail+capacity)  free slots, producers may reserve
//
// and consTail <= consHead <= prodTail <= prodHead <= consTail+capacity.
// Exactly one goroutine reads or writes a slot while it is reserved, and no
// goroutine touches it between its copy and the tail passing it.
type MPMC[T any] struct {
	_ cpu.CacheLinePad
	// Each word on its own cache line. A head is touched only by its own
	// side (and by Close and drained, rarely), so with one goroutine per
	// side its line stays in that core's cache and the reservation
	// compare-and-swap does not miss. A tail is written by its side and
	// read by the other side once per burst. With a head and tail sharing a
	// line, as in DPDK's struct rte_ring_headtail, the other side's reads
	// of the tail would also pull the head's line away from its owner, a
	// cache miss on every reservation.
	prodHead atomic.Uint64 // carries closedBit too
	_        cpu.CacheLinePad
	prodTail atomic.Uint64
	_        cpu.CacheLinePad
	consHead atomic.Uint64
	_        cpu.CacheLinePad
	consTail atomic.Uint64
	_        cpu.CacheLinePad
	// Read-mostly state: set at construction, except the waiter counts
	// (written only when a goroutine parks).
	slots         []T
	mask          uint64
	capacity      uint32
	headTailLimit uint32    // htd_max: how far a head may run ahead of its tail
	notEmpty      waitQueue // consumers waiting for items
	notFull       waitQueue // producers waiting for room
	done          chan struct{}
	close         sync.Once
	_             cpu.CacheLinePad
}

// A head or tail word: position in bits 0-31, operation count in bits
// 32-62 (wrapping), closedBit in bit 63 of prodHead. Positions wrap at 2^32,
// and differences of positions are taken in uint32, which is exact because
// capacity <= maxCapacity < 2^31.
const (
	countShift = 32
	countMask  = 1<<31 - 1
)

func position(w uint64) uint32 { return uint32(w) }
func count(w uint64) uint32    { return uint32(w>>countShift) & countMask }
func word(pos, cnt uint32) uint64 {
	return uint64(cnt&countMask)<<countShift | uint64(pos)
}

// NewMPMC returns an empty ring with room for capacity items, rounded up to
// a power of two. It panics if capacity < 1 or capacity > 1<<30.
func NewMPMC[T any](capacity int) *MPMC[T] {
	n := roundCapacity(capacity)
	return &MPMC[T]{
		slots:         make([]T, n),
		mask:          n - 1,
		capacity:      uint32(n),
		headTailLimit: uint32(n / 8),
		notEmpty:      newWaitQueue(),
		notFull:       newWaitQueue(),
		done:          make(chan struct{}),
	}
}

// Cap returns the number of slots.
func (r *MPMC[T]) Cap() int { return len(r.slots) }

// Len returns the number of items published and not yet reserved by a
// consumer. Under concurrent use it is a snapshot that may be stale as soon
// as it returns.
func (r *MPMC[T]) Len() int {
	// Load the consumer word first: prodTail only moves forward and never
	// falls behind the later consHead, so the difference is not negative.
	head := position(r.consHead.Load())
	tail := position(r.prodTail.Load())
	return int(min(tail-head, r.capacity))
}

// TryEnqueue adds as many items from the front of vs as there is room for,
// in order and without blocking, and returns how many it added. After Close
// it adds none. Safe for concurrent use.
func (r *MPMC[T]) TryEnqueue(vs []T) int {
	if len(vs) == 0 {
		return 0
	}
	var head uint64
	var n uint32
	for {
		head = waitHeadTail(&r.prodHead, &r.prodTail, r.headTailLimit)
		if head&closedBit != 0 {
			return 0
		}
		// Load-acquire of consTail; pairs with the compare-and-swap
		// (release) of consTail in TryDequeue: every slot below its
		// position has been read and cleared, so it may be overwritten.
		// If head is stale, free is garbage, but then the compare-and-swap
		// below fails; if that succeeds, head was current and
		// consTail <= head <= consTail+capacity held when consTail was read.
		free := r.capacity - (position(head) - position(r.consTail.Load()))
		n = uint32(min(uint64(len(vs)), uint64(free)))
		if n == 0 {
			return 0
		}
		// Reserve [head, head+n) and count ourselves in. Fails if another
		// producer got there first or Close set closedBit.
		if r.prodHead.CompareAndSwap(head, word(position(head)+n, count(head)+1)) {
			break
		}
	}
	copyIn(r.slots, r.mask, uint64(position(head)), vs[:n])
	// Release: pairs with the load-acquire of prodTail in TryDequeue, so
	// that our items are written before a consumer can see them published.
	finish(&r.prodTail, &r.prodHead)
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
	var head uint64
	var n uint32
	for {
		head = waitHeadTail(&r.consHead, &r.consTail, r.headTailLimit)
		// Load-acquire of prodTail; pairs with the compare-and-swap
		// (release) of prodTail in TryEnqueue: the items below its position
		// are fully written. prodTail is loaded after head and never falls
		// behind consHead, so the difference does not wrap.
		n = uint32(min(uint64(len(out)), uint64(position(r.prodTail.Load())-position(head))))
		if n == 0 {
			return 0
		}
		// Reserve [head, head+n) against other consumers.
		if r.consHead.CompareAndSwap(head, word(position(head)+n, count(head)+1)) {
			break
		}
	}
	copyOut(r.slots, r.mask, uint64(position(head)), out[:n])
	// Release: pairs with the load-acquire of consTail in TryEnqueue, so
	// that our reads and clears of the slots happen before a producer
	// reserves them again.
	finish(&r.consTail, &r.consHead)
	r.notFull.wake()
	return int(n)
}

// waitHeadTail returns a side's head word once the head is at most limit
// slots ahead of the tail (DPDK's htd_max check). Nothing is held while it
// waits, so yielding here delays no one else.
func waitHeadTail(head, tail *atomic.Uint64, limit uint32) uint64 {
	h := head.Load()
	for try := 0; position(h)-position(tail.Load()) > limit; try++ {
		if !canSpin || try >= spinPolls {
			runtime.Gosched()
		}
		h = head.Load()
	}
	return h
}

// finish counts a completed operation out on a side's tail. If that makes
// the tail's count equal to the head's, no operation is in flight and
// everything up to the head position is done, so the tail moves there. The
// head is loaded after the tail: if a new reservation slips in after that
// load, its own finish will move the tail over it.
func finish(tail, head *atomic.Uint64) {
	for {
		// Load-acquire of the tail and the head; the compare-and-swap is the
		// release that publishes (see the callers for the edges).
		t := tail.Load()
		h := head.Load()
		next := word(position(t), count(t)+1)
		if count(next) == count(h) {
			next = word(position(h), count(h))
		}
		if tail.CompareAndSwap(t, next) {
			return
		}
	}
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
	woken := false
	for {
		n := r.TryEnqueue(vs)
		vs = vs[n:]
		// Chain wake-up: a producer woken by the one pending token passes it
		// on while room remains for the others.
		if woken && n > 0 && r.writable() {
			r.notFull.wake()
		}
		if len(vs) == 0 {
			return nil
		}
		if r.closed() {
			return ErrClosed
		}
		rang, err := r.notFull.pause(ctx, r.writableOrClosed, r.done)
		if err != nil {
			return err
		}
		woken = woken || rang
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
	woken := false
	for {
		if n := r.TryDequeue(out); n > 0 {
			// Chain wake-up: a consumer woken by the one pending token
			// passes it on while items remain for the others.
			if woken && r.readable() {
				r.notEmpty.wake()
			}
			return n, nil
		}
		if r.drained() {
			return 0, ErrClosed
		}
		rang, err := r.notEmpty.pause(ctx, r.readableOrClosed, r.done)
		if err != nil {
			return 0, err
		}
		woken = woken || rang
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
func (r *MPMC[T]) readable() bool {
	return position(r.prodTail.Load()) != position(r.consHead.Load())
}

// writable reports whether producers could reserve a slot.
func (r *MPMC[T]) writable() bool {
	return position(r.prodHead.Load())-position(r.consTail.Load()) < r.capacity
}

func (r *MPMC[T]) readableOrClosed() bool { return r.readable() || r.closed() }
func (r *MPMC[T]) writableOrClosed() bool { return r.writable() || r.closed() }

// drained reports whether the ring is closed and every item reserved by a
// producer has been reserved by a consumer. Items reserved by producers
// before Close count as not drained until they are dequeued.
func (r *MPMC[T]) drained() bool {
	head := r.prodHead.Load()
	return head&closedBit != 0 && position(r.consHead.Load()) == position(head)
}
