// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package dataplane

import (
	"encoding/binary"
	"math/rand/v2"
	"sync"
	"testing"

	"golang.zx2c4.com/wireguard/replay"

	"github.com/wirebatch/wirebatch/protocol"
)

func TestReplayFilterTable(t *testing.T) {
	type step struct {
		counter uint64
		want    bool
	}
	cases := []struct {
		name  string
		steps []step
	}{
		{"in order", []step{{0, true}, {1, true}, {2, true}, {3, true}, {64, true}, {65, true}}},
		{"duplicate", []step{{0, true}, {0, false}, {5, true}, {5, false}, {4, true}, {4, false}}},
		{"reordered inside window", []step{{10, true}, {8, true}, {9, true}, {7, true}, {8, false}, {11, true}, {0, true}}},
		{"window edge", []step{
			{ReplayWindow + 100, true},
			{100 + 1, true}, // highest - counter = ReplayWindow - 1: inside
			{100, true},     // exactly ReplayWindow behind: the oldest counter inside
			{99, false},     // one further: outside
			{100, false},
		}},
		{"reordered outside window", []step{{0, true}, {ReplayWindow * 3, true}, {1, false}, {ReplayWindow*2 + 1, true}, {ReplayWindow * 2, true}, {ReplayWindow*2 - 1, false}}},
		{"far jump clears the ring", []step{
			{1, true}, {2, true}, {1 << 40, true}, {1<<40 - 1, true}, {1<<40 - 1, false},
			{1<<40 - 64*replayWords, false}, // was never seen, but is outside the window now
			{1<<40 + 64*replayWords, true},
			{1 << 40, false}, // outside again after the second jump
		}},
		{"jump by one block keeps neighbours", []step{{63, true}, {64, true}, {63, false}, {0, true}, {0, false}}},
		{"counter limit", []step{
			{protocol.RejectAfterMessages - 1, true},
			{protocol.RejectAfterMessages, false},
			{protocol.RejectAfterMessages + 1, false},
			{1<<64 - 1, false},
			{protocol.RejectAfterMessages - 2, true},
			{protocol.RejectAfterMessages - 1, false},
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var f ReplayFilter
			for i, s := range c.steps {
				if got := f.Check(s.counter); got != s.want {
					t.Fatalf("step %d: Check(%d) = %v, want %v", i, s.counter, got, s.want)
				}
			}
			f.Reset()
			if !f.Check(0) {
				t.Fatal("Check(0) after Reset = false")
			}
		})
	}
}

// TestReplayFilterModel compares the window with an exact model: a counter is accepted iff it was not
// accepted before, is below the limit, and is at most ReplayWindow behind the highest accepted one.
func TestReplayFilterModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var f ReplayFilter
	seen := map[uint64]bool{}
	var highest uint64
	any := false
	base := uint64(0)
	for i := 0; i < 200000; i++ {
		switch rng.IntN(10) {
		case 0:
			base += uint64(rng.IntN(3 * ReplayWindow))
		case 1:
			base += uint64(rng.IntN(64))
		}
		c := base + uint64(rng.IntN(200)) - min(base, uint64(rng.IntN(ReplayWindow+300)))
		want := !seen[c] && (!any || c > highest || highest-c <= ReplayWindow)
		if got := f.Check(c); got != want {
			t.Fatalf("op %d: Check(%d) = %v, want %v (highest %d)", i, c, got, want, highest)
		}
		if want {
			seen[c] = true
			if !any || c > highest {
				highest = c
			}
			any = true
		}
	}
}

// TestReplayConcurrent has several decrypt-like workers share one keypair's window, as the decrypt
// stage does, under the keypair's mutex: every counter must be accepted exactly once.
func TestReplayConcurrent(t *testing.T) {
	kp := &Keypair{}
	const workers, perWorker = 4, 20000
	accepted := make([]int, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Every worker offers every counter, in a slightly shuffled order that stays well
			// inside the window, so each counter must be won by exactly one worker.
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			for i := 0; i < perWorker; i += 16 {
				for _, j := range rng.Perm(16) {
					kp.replayMu.Lock()
					ok := kp.replay.Check(uint64(i + j))
					kp.replayMu.Unlock()
					if ok {
						accepted[w]++
					}
				}
			}
		}()
	}
	wg.Wait()
	total := 0
	for _, a := range accepted {
		total += a
	}
	if total != perWorker {
		t.Fatalf("accepted %d counters in all, want exactly %d", total, perWorker)
	}
}

// FuzzReplayFilter runs the fuzzer's counters through our window and wireguard-go's (replay.Filter,
// the same RFC 6479 ring as the kernel's) and wants the same verdict for every one: a counter one
// accepts and the other drops is a packet lost or replayed on one side of a mixed deployment. Each
// 8-byte step is a delta from the highest counter so far, so that steps stay near the window.
func FuzzReplayFilter(f *testing.F) {
	step := func(deltas ...int64) []byte {
		var b []byte
		for _, d := range deltas {
			b = binary.LittleEndian.AppendUint64(b, uint64(d))
		}
		return b
	}
	f.Add(step(0, 1, 2, 1, -1, 64, -63))
	f.Add(step(ReplayWindow+100, -ReplayWindow, -ReplayWindow-1, -ReplayWindow+1))
	f.Add(step(5, 1<<40, -64*replayWords, 64*replayWords, -64*replayWords-1))
	limit := protocol.RejectAfterMessages
	f.Add(step(int64(limit-2), 1, 1, -1, -2, -ReplayWindow))
	f.Fuzz(func(t *testing.T, steps []byte) {
		var ours ReplayFilter
		var theirs replay.Filter
		var highest uint64
		for i := 0; i+8 <= len(steps); i += 8 {
			c := highest + binary.LittleEndian.Uint64(steps[i:]) // wraps: a delta may be negative
			got, want := ours.Check(c), theirs.ValidateCounter(c, protocol.RejectAfterMessages)
			if got != want {
				t.Fatalf("step %d: counter %d (highest %d): ours %v, wireguard-go %v", i/8, c, highest, got, want)
			}
			if got && c > highest {
				highest = c
			}
		}
	})
}
