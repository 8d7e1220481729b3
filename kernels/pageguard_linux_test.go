// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

//go:build linux

package kernels_test

// Page-guard tests: every buffer of an op (Nonce, AD, Src, Dst) placed flush against an inaccessible
// page, at its end or at its start, so that a SIMD tail that reads or writes even one byte outside
// its slice (a full-vector load of a short tail, a backwards overlapping load) faults instead of
// passing unnoticed. Guard bytes beside a slice (oracle_test.go) only catch stray writes; this catches
// reads too.

import (
	"bytes"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/wirebatch/wirebatch/kernels"
)

// guardedArena hands out slots of slotPages accessible pages, each followed by an inaccessible page
// (the first slot also preceded by one).
type guardedArena struct {
	mem      []byte
	pageSize int
	next     int
}

const slotPages = 2 // room for the longest message below plus its tag

func newGuardedArena(t *testing.T, slots int) *guardedArena {
	ps := unix.Getpagesize()
	size := (1 + slots*(slotPages+1)) * ps
	mem, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		t.Skipf("mmap: %v", err)
	}
	t.Cleanup(func() { unix.Munmap(mem) })
	for g := 0; g < size; g += (slotPages + 1) * ps {
		if err := unix.Mprotect(mem[g:g+ps], unix.PROT_NONE); err != nil {
			t.Fatalf("mprotect: %v", err)
		}
	}
	return &guardedArena{mem: mem, pageSize: ps}
}

// place copies b into a fresh slot, flush against the following guard page (atEnd) or the
// preceding one, and returns the slot's copy. n is the slice length (len(b) for inputs).
func (a *guardedArena) place(t *testing.T, b []byte, n int, atEnd bool) []byte {
	ps := a.pageSize
	if n > slotPages*ps {
		t.Fatalf("%d bytes do not fit a slot", n)
	}
	start := (1 + a.next*(slotPages+1)) * ps
	a.next++
	if a.next*(slotPages+1)*ps+ps > len(a.mem) {
		t.Fatal("arena exhausted")
	}
	slot := a.mem[start : start+slotPages*ps]
	var s []byte
	if atEnd {
		s = slot[len(slot)-n:]
	} else {
		s = slot[:n:n]
	}
	copy(s, b)
	return s
}

func TestPageGuards(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector does not shadow memory mapped by the test")
	}
	var lens []int
	for n := 0; n <= 80; n++ {
		lens = append(lens, n)
	}
	lens = append(lens, 127, 128, 129, 255, 256, 257, 1023, 1024, 1025, 1420, 4095, 4096, 4097)
	if testing.Short() {
		lens = []int{0, 1, 15, 16, 17, 31, 63, 64, 65, 1420, 4097}
	}
	r := newRand(t)
	keys := keyPool(t, r, 1)
	for _, tier := range kernels.Tiers() {
		for _, atEnd := range []bool{true, false} {
			// Seal and Open batches of every suite and length; four slots per op and direction.
			arena := newGuardedArena(t, 8*len(lens)*len(keys))
			var seal, open []kernels.Op
			var want, pts [][]byte
			for _, k := range keys {
				for _, n := range lens {
					nonce, ad, pt := randBytes(r, k.suite.NonceSize()), randBytes(r, n%67), randBytes(r, n)
					ct := k.sealOracle(nonce, ad, pt)
					seal = append(seal, kernels.Op{Key: k.key,
						Nonce: arena.place(t, nonce, len(nonce), atEnd), AD: arena.place(t, ad, len(ad), atEnd),
						Src: arena.place(t, pt, n, atEnd), Dst: arena.place(t, nil, len(ct), atEnd)})
					open = append(open, kernels.Op{Key: k.key,
						Nonce: arena.place(t, nonce, len(nonce), atEnd), AD: arena.place(t, ad, len(ad), atEnd),
						Src: arena.place(t, ct, len(ct), atEnd), Dst: arena.place(t, nil, n, atEnd)})
					want, pts = append(want, ct), append(pts, pt)
				}
			}
			tier.Seal(seal)
			if failed := tier.Open(open); failed != 0 {
				t.Errorf("%v (buffers at page %s): %d Opens failed", tier, map[bool]string{true: "ends", false: "starts"}[atEnd], failed)
			}
			for i := range seal {
				if !bytes.Equal(seal[i].Dst, want[i]) || !bytes.Equal(open[i].Dst, pts[i]) {
					t.Errorf("%v: op %d (%v, len %d) at a page boundary differs from the oracle", tier, i, seal[i].Key.Suite(), len(pts[i]))
				}
			}
		}
	}
}
