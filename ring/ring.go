// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

// Package ring provides bounded lock-free queues that hand items between the
// stages of the data plane a burst at a time: SPSC for one producer and one
// consumer, MPMC for any number of each.
//
// Both rings follow DPDK's rte_ring: a power-of-two array of slots and
// free-running indexes that are never reset, only masked when a slot is
// addressed, so "how many items" is always a plain (modular) subtraction.
// SPSC's indexes are 64-bit; MPMC packs a 32-bit position and an operation
// count into each 64-bit word. Producer and consumer indexes live on
// separate cache lines so that the two sides of a pipeline stage do not
// invalidate each other's lines on every burst. A burst costs a handful of
// atomic operations however many items it moves.
//
// TryEnqueue and TryDequeue never block. Enqueue and Dequeue wait: first they
// poll briefly (the other side is usually a microsecond away), then they park
// the goroutine on a channel, so an idle pipeline burns no CPU. The side that
// makes progress signals the other only when it has registered as a waiter,
// so a busy pipeline makes no wake-up calls at all.
//
// Memory ordering: Go's sync/atomic operations are sequentially consistent
// (The Go Memory Model, "Atomic Values"), which is stronger than the
// acquire/release pairs the algorithms need. The comment at each atomic
// names the edge it forms, as rte_ring does, so that the argument can be
// checked and the code ported.
package ring

import (
	"errors"
	"math/bits"
)

// ErrClosed is returned by Enqueue once the ring is closed, and by Dequeue
// once the ring is closed and every item enqueued before Close has been
// dequeued.
var ErrClosed = errors.New("ring: closed")

// closedBit is set by Close in the word producers publish through (MPMC's
// prodHead, SPSC's prodTail). Keeping the flag in the same word as the index
// makes "accepted before Close" and "rejected after Close" a single atomic
// decision: a producer's compare-and-swap on the word fails once Close has
// set the bit, so no item can slip in after a consumer has seen the ring
// closed and drained. SPSC's index would need 2^63 items to reach the bit;
// MPMC's operation count is masked below it.
const closedBit = 1 << 63

// maxCapacity bounds a ring's slot count so that MPMC's 32-bit positions
// stay unambiguous (their differences must stay below 2^31).
const maxCapacity = 1 << 30

// roundCapacity returns the power of two at or above capacity, the slot count
// of a ring; masking a free-running index then addresses its slot.
func roundCapacity(capacity int) uint64 {
	if capacity < 1 {
		panic("ring: capacity must be at least 1")
	}
	if capacity > maxCapacity {
		panic("ring: capacity above 1<<30")
	}
	return 1 << bits.Len64(uint64(capacity-1))
}

// smallBurst is the burst size up to which copyIn and copyOut move items
// one by one. copy and clear of a slice of pointers are calls into the
// runtime (typedslicecopy, memclrHasPointers) that cost more than the
// assignments themselves for a few items, as in a pool handing out one
// batch at a time.
const smallBurst = 4

// copyIn stores vs into the slots starting at index pos, wrapping at the end
// of the array.
func copyIn[T any](slots []T, mask, pos uint64, vs []T) {
	if len(vs) <= smallBurst {
		for k := range vs {
			slots[(pos+uint64(k))&mask] = vs[k]
		}
		return
	}
	i := pos & mask
	n := copy(slots[i:], vs)
	copy(slots, vs[n:])
}

// copyOut loads len(out) items from the slots starting at index pos and
// clears those slots, so that the ring keeps no reference alive to an item it
// no longer holds (what the garbage collector sees as reachable should be
// what the ring owns).
func copyOut[T any](slots []T, mask, pos uint64, out []T) {
	if len(out) <= smallBurst {
		var zero T
		for k := range out {
			slot := &slots[(pos+uint64(k))&mask]
			out[k] = *slot
			*slot = zero
		}
		return
	}
	i := pos & mask
	n := copy(out, slots[i:])
	clear(slots[i : i+uint64(n)])
	m := copy(out[n:], slots)
	clear(slots[:m])
}

// clearRange clears n slots starting at index pos.
func clearRange[T any](slots []T, mask, pos, n uint64) {
	i := pos & mask
	first := min(n, uint64(len(slots))-i)
	clear(slots[i : i+first])
	clear(slots[:n-first])
}
