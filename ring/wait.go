package ring

import (
	"context"
	"runtime"
	"sync/atomic"
)

// Waiting. A goroutine that finds the ring empty (consumer) or full
// (producer) first retries a few times, yielding the processor between
// tries, because in a running pipeline the other side usually makes progress
// within microseconds. Then it parks on a waitQueue.
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

// spinTries is how many times a blocking call retries, yielding the processor
// between tries, before it parks. A yield with nothing else runnable costs
// ~0.1-0.2 µs, so this waits a few microseconds: longer than a burst takes to
// arrive in a busy pipeline, far shorter than the ~5-10 µs a park and wake-up
// round trip costs.
const spinTries = 32

// waitQueue parks the goroutines waiting for one condition of a ring: items
// to dequeue, or room to enqueue.
type waitQueue struct {
	// waiters counts goroutines between their registration in park and their
	// return from it. Written only by parking goroutines, read by wakers on
	// every burst: it stays shared in all caches while nobody parks.
	waiters atomic.Int32
	bell    chan struct{}
}

func newWaitQueue() waitQueue {
	return waitQueue{bell: make(chan struct{}, 1)}
}

// wake rings the bell if a goroutine is parked or about to park.
func (q *waitQueue) wake() {
	// Pairs with the Add(1) in park: the caller has just published an index
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

// pause is called by a blocking operation that could not make progress on
// its attempt number try (counting from 0). Early attempts yield the
// processor and return nil; later ones park until ready reports true, the
// bell rings or closed is closed. It returns ctx.Err() if ctx is done first.
func (q *waitQueue) pause(ctx context.Context, try int, ready func() bool, closed <-chan struct{}) error {
	if try < spinTries {
		runtime.Gosched()
		return nil
	}
	// Pairs with the Load in wake (see the comment at the top of this file).
	q.waiters.Add(1)
	defer q.waiters.Add(-1)
	if ready() {
		return nil
	}
	select {
	case <-q.bell:
		return nil
	case <-closed:
		// A producer that reserved slots before Close may still be copying
		// into them; give it the processor before the caller looks again.
		runtime.Gosched()
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
