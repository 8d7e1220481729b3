// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package dataplane

import (
	"math/rand/v2"
	"sync"
	"testing"
)

// TestCommitterOrder: units finished by several workers in any order are committed exactly once
// each, in their numbered order, one at a time, and slots are reused as units circulate.
func TestCommitterOrder(t *testing.T) {
	const units, total, workers = 6, 20000, 4
	var (
		mu        sync.Mutex
		committed []uint64
		inStep    int
	)
	free := make(chan *unit, units)
	c := newCommitter(units, func(u *unit) {
		mu.Lock()
		inStep++
		if inStep != 1 {
			t.Errorf("two commits at once")
		}
		committed = append(committed, u.seq)
		inStep--
		mu.Unlock()
		free <- u
	})
	for range units {
		free <- &unit{}
	}
	work := make(chan *unit)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(w), 7))
			for u := range work {
				for range r.IntN(200) { // finish after a while, out of order
					_ = r.Uint64()
				}
				c.done(u)
			}
		}()
	}
	for seq := range uint64(total) {
		u := <-free
		u.seq = seq
		work <- u
	}
	close(work)
	wg.Wait()
	if len(committed) != total {
		t.Fatalf("%d units committed, want %d", len(committed), total)
	}
	for i, seq := range committed {
		if seq != uint64(i) {
			t.Fatalf("commit %d was unit %d", i, seq)
		}
	}
}
