// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package flow

import (
	"cmp"
	"math/bits"
	"math/rand/v2"
	"slices"
	"testing"
)

func observeAll(seqs ...uint64) Counts {
	var t Tracker
	for _, s := range seqs {
		t.Observe(s)
	}
	return t.Counts()
}

func TestSyntheticSequences(t *testing.T) {
	tests := []struct {
		name string
		seqs []uint64
		want Counts
	}{
		{"in order", []uint64{0, 1, 2, 3, 4}, Counts{Received: 5, Expected: 5}},
		{"loss only", []uint64{0, 1, 5, 6}, Counts{Received: 4, Expected: 7}},
		{"first packet lost", []uint64{1, 2}, Counts{Received: 2, Expected: 3}},
		// 3 arrives right after 4: the first arrival above 3 is one position earlier.
		{"adjacent swap", []uint64{0, 1, 2, 4, 3, 5}, Counts{Received: 6, Reordered: 1, MaxReorderExtent: 1, Expected: 6}},
		// 3 arrives at position 1; 1 arrives at position 4 (extent 3), 2 at position 5 (extent 4).
		{"late pair", []uint64{0, 3, 4, 5, 1, 2}, Counts{Received: 6, Reordered: 2, MaxReorderExtent: 4, Expected: 6}},
		// Reversed: every packet after the first is reordered; 0 arrives last
		// at position 4 while 4 (the first above it) arrived at position 0.
		{"reversed", []uint64{4, 3, 2, 1, 0}, Counts{Received: 5, Reordered: 4, MaxReorderExtent: 4, Expected: 5}},
		// Duplicates are neither unique nor reordered (RFC 4737 section 3.3).
		{"duplicates", []uint64{0, 1, 1, 2, 0, 2}, Counts{Received: 3, Duplicates: 3, Expected: 3}},
		{"duplicate of a reordered packet", []uint64{0, 2, 1, 1}, Counts{Received: 3, Duplicates: 1, Reordered: 1, MaxReorderExtent: 1, Expected: 3}},
		{"beyond window", []uint64{0, WindowSize + 10, 5, 5}, Counts{Received: 4, Reordered: 2, MaxReorderExtent: 2, BeyondWindow: 2, Expected: WindowSize + 11}},
	}
	for _, tt := range tests {
		if got := observeAll(tt.seqs...); got != tt.want {
			t.Errorf("%s %v:\n got %+v\nwant %+v", tt.name, tt.seqs, got, tt.want)
		}
	}
}

func TestMissing(t *testing.T) {
	c := observeAll(0, 1, 5, 6)
	if c.Missing() != 3 {
		t.Errorf("Missing = %d, want 3", c.Missing())
	}
	c = observeAll(0, 0, 0)
	if c.Missing() != 0 {
		t.Errorf("Missing after duplicates = %d, want 0", c.Missing())
	}
}

func TestAdd(t *testing.T) {
	a := Counts{Received: 1, Duplicates: 2, Reordered: 3, MaxReorderExtent: 9, BeyondWindow: 4, Expected: 5}
	a.Add(Counts{Received: 10, Duplicates: 20, Reordered: 30, MaxReorderExtent: 7, BeyondWindow: 40, Expected: 50})
	want := Counts{Received: 11, Duplicates: 22, Reordered: 33, MaxReorderExtent: 9, BeyondWindow: 44, Expected: 55}
	if a != want {
		t.Errorf("Add = %+v, want %+v", a, want)
	}
}

// TestAgainstOracle sends a long stream with loss, duplication and bounded
// displacement through a Tracker and compares it with a map-based count of
// the same definitions.
func TestAgainstOracle(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const n = 200_000
	var arrivals []uint64
	for s := range uint64(n) {
		if rng.IntN(100) < 3 { // lost
			continue
		}
		arrivals = append(arrivals, s)
		if rng.IntN(100) < 2 { // duplicated
			arrivals = append(arrivals, s)
		}
	}
	// Delay 1% of the packets by up to 64 positions, well inside the window.
	keys := make([]int, len(arrivals))
	for i := range keys {
		keys[i] = i
		if rng.IntN(100) == 0 {
			keys[i] += rng.IntN(64)
		}
	}
	order := make([]int, len(arrivals))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(keys[a], keys[b]) })
	delayed := make([]uint64, len(arrivals))
	for i, o := range order {
		delayed[i] = arrivals[o]
	}
	arrivals = delayed

	var want Counts
	seen := map[uint64]bool{}
	var nextExp uint64
	for _, s := range arrivals {
		switch {
		case seen[s]:
			want.Duplicates++
		case s >= nextExp:
			seen[s] = true
			want.Received++
			nextExp = s + 1
		default:
			seen[s] = true
			want.Received++
			want.Reordered++
		}
	}
	want.Expected = nextExp
	if want.Reordered == 0 || want.Duplicates == 0 || want.Received == n {
		t.Fatalf("the stream exercises too little: %+v", want)
	}

	var tr Tracker
	for _, s := range arrivals {
		tr.Observe(s)
	}
	got := tr.Counts()
	got.MaxReorderExtent = 0 // checked by the synthetic cases
	if got != want {
		t.Errorf("got  %+v\nwant %+v", got, want)
	}
	population := 0
	for _, w := range tr.seen {
		population += bits.OnesCount64(w)
	}
	if population > WindowSize {
		t.Errorf("window remembers %d sequence numbers, more than WindowSize", population)
	}
}

func TestZeroAllocations(t *testing.T) {
	var tr Tracker
	var seq uint64
	allocs := testing.AllocsPerRun(1000, func() {
		tr.Observe(seq + 1)
		tr.Observe(seq)
		seq += 2
	})
	if allocs != 0 {
		t.Errorf("Observe allocates %v times per run", allocs)
	}
}

func BenchmarkObserveInOrder(b *testing.B) {
	var tr Tracker
	var seq uint64
	for b.Loop() {
		tr.Observe(seq)
		seq++
	}
}
