// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package ring

import (
	"context"
	"runtime"
	"sync/atomic"
)

// Waiting. A goroutine that finds the ring empty (consumer) or full
// (producer) first polls for a short while, because in a running pipeline
// the other side usually makes progress within a microsecond or two. Then it
// parks on a waitQueue. The poll is a plain loop of atomic loads, not
// runtime.Gosched: Gosched puts the goroutine on the scheduler's global run
// queue under its lock, and with several goroutines spinning that lock
// becomes the bottleneck.
//
// The lost wake-up problem is the classic store-buffer (Dekker) pattern:
//
//	waiter:  waiters.Add(1);  if ready() { give up parking };  sleep
//	waker:   publish index;   if waiters.Load() > 0 { ring the bell }
//
// Both sides write their own word and then read the other's. Because Go's
// atomics are sequentially consistent, at least one of the two reads sees the
// other's write: either the waiter sees the published index and does not
// sleep, or the waker sees the registration and rings. (With C11-style
// acquire/release alone this would need a full fence on both sides, as in
// the Linux futex and DPDK event documentation.)
//
// The bell is a channel with room for one token. A waker sends without
// blocking; if a token is already pending, that token will wake somebody, so
// dropping the second one loses nothing. A woken consumer that leaves items
// behind rings again (a chain wake-up, see Dequeue), so several parked
// waiters are woken one after another as long as there is work for them,
// without the producer paying a wake-up per waiter. A stale token left in the
// channel costs the next waiter one spurious pass through its loop.
// Close wakes every waiter at once by closing the ring's done channel.

// spinPolls is how many times a waiting goroutine checks its condition
// before it parks. Each check is one or two loads of lines the other side
// writes, 10-100 ns when they move between cores, so this polls for up to a
// microsecond or so: about what a burst takes to arrive in a busy pipeline,
// and less than the several microseconds a park and wake-up round trip
// costs.
const spinPolls = 16

// canSpin reports whether polling can see progress at all: on a single CPU
// the goroutine that would make it cannot run while we poll.
var canSpin = runtime.NumCPU() > 1

// waitQueue parks the goroutines waiting for one condition of a ring: items
// to dequeue, or room to enqueue.
type waitQueue struct {
	// waiters counts goroutines between their registration in pause and
	// their return from it. Written only by parking goroutines, read by wakers on
	// every burst: it stays shared in all caches while nobody parks.
	waiters atomic.Int32
	bell    chan struct{}
}

func newWaitQueue() waitQueue {
	return waitQueue{bell: make(chan struct{}, 1)}
}

// wake rings the bell if a goroutine is parked or about to park.
func (q *waitQueue) wake() {
	// Pairs with the Add(1) in pause: the caller has just published an index
	// (a sequentially consistent store or compare-and-swap), so either this
	// load sees the registration or the waiter's ready check sees the index.
	if q.waiters.Load() == 0 {
		return
	}
	select {
	case q.bell <- struct{}{}:
	default: // a token is already pending and will wake a waiter
	}
}

// pause is called by a blocking operation that could not make progress. It
// returns once ready reports true, after polling it briefly, or after
// parking until the bell rings or closed is closed; the caller then tries
// again. It returns ctx.Err() if ctx is done first. rang reports that it
// took the bell's token: the caller then owes the next waiter a chain
// wake-up if it leaves work behind.
func (q *waitQueue) pause(ctx context.Context, ready func() bool, closed <-chan struct{}) (rang bool, err error) {
	if canSpin {
		for range spinPolls {
			if ready() {
				return false, nil
			}
		}
	}
	// Pairs with the Load in wake (see the comment at the top of this file).
	q.waiters.Add(1)
	defer q.waiters.Add(-1)
	if ready() {
		return false, nil
	}
	select {
	case <-q.bell:
		return true, nil
	case <-closed:
		// A producer that reserved slots before Close may still be copying
		// into them; give it the processor before the caller looks again.
		runtime.Gosched()
		return false, nil
	case <-ctx.Done():
		return false, ctx.Err()
	}
}
