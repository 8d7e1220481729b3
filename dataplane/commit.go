// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package dataplane

import "sync"

// committer puts the units of one direction through their last step (send or write) in the order
// the reader numbered them, run by the workers themselves instead of by a consumer goroutine of
// its own: the worker that finishes a unit passes it to done, and whichever worker finds the next
// unit in line ready commits it and every one ready behind it. Nobody waits for a turn: a worker
// whose unit is early leaves it for the worker that commits its predecessor. Against a consumer
// goroutine this saves a goroutine hand-off per batch, and a unit committed by the worker that
// sealed or opened it is sent or written from that CPU's caches.
//
// Only one worker commits at a time (busy), so the commit step needs no locking of its own and
// sees what earlier commits did: mu orders each commit after the previous one and after the done
// that made its unit ready. Units are numbered from 0 without gaps, and at most len(ready) are
// ever in flight (a direction's units), so seq modulo len(ready) is a unit's own slot.
type committer struct {
	mu    sync.Mutex
	ready []*unit // by seq modulo len(ready): done and not yet committed
	next  uint64  // the seq to commit next
	busy  bool    // a worker is committing
	step  func(*unit)
}

func newCommitter(units int, step func(*unit)) *committer {
	return &committer{ready: make([]*unit, units), step: step}
}

// done marks u, numbered u.seq, as ready and commits the units that are next in line, if no other
// worker is committing.
func (c *committer) done(u *unit) {
	c.mu.Lock()
	c.ready[u.seq%uint64(len(c.ready))] = u
	if c.busy {
		c.mu.Unlock() // the committing worker finds u before it stops
		return
	}
	c.busy = true
	for {
		slot := &c.ready[c.next%uint64(len(c.ready))]
		v := *slot
		if v == nil || v.seq != c.next {
			break
		}
		*slot = nil
		c.next++
		c.mu.Unlock()
		c.step(v)
		c.mu.Lock()
	}
	c.busy = false
	c.mu.Unlock()
}
