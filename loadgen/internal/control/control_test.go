// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package control

import (
	"testing"
	"time"
)

func TestGrid(t *testing.T) {
	const origin = 5_000
	g := Grid{Origin: origin, Interval: 100, Duration: 250} // intervals [0,100) [100,200) [200,250)
	if err := g.Check(); err != nil {
		t.Fatal(err)
	}
	if g.Count() != 3 {
		t.Errorf("Count() = %d, want 3", g.Count())
	}
	for k, want := range [][2]int64{{0, 100}, {100, 200}, {200, 250}} {
		if start, end := g.Bounds(k); start != want[0] || end != want[1] {
			t.Errorf("Bounds(%d) = %d, %d; want %d, %d", k, start, end, want[0], want[1])
		}
	}
	for send, want := range map[int64]int{
		origin - 1e9: 0, // before the origin: the first interval
		origin:       0,
		origin + 99:  0,
		origin + 100: 1,
		origin + 199: 1,
		origin + 200: 2,
		origin + 249: 2,
		origin + 250: 2, // a late stamp past the end: the last interval
		1 << 62:      2,
	} {
		if got := g.Index(send); got != want {
			t.Errorf("Index(origin%+d) = %d, want %d", send-origin, got, want)
		}
	}
	if n := (Grid{Interval: 100, Duration: 300}).Count(); n != 3 {
		t.Errorf("300 in intervals of 100: %d intervals, want 3", n)
	}
	if n := (Grid{}).Count(); n != 0 {
		t.Errorf("the zero Grid has %d intervals", n)
	}
}

func TestGridCheck(t *testing.T) {
	good := []Grid{
		{},
		{Origin: 1, Interval: int64(time.Second), Duration: int64(10 * time.Second)},
		{Interval: 1, Duration: MaxIntervals},
	}
	for _, g := range good {
		if err := g.Check(); err != nil {
			t.Errorf("Check(%+v): %v", g, err)
		}
	}
	bad := []Grid{
		{Interval: 1, Duration: MaxIntervals + 1},
		{Interval: int64(time.Microsecond), Duration: int64(time.Hour)},
		{Interval: 0, Duration: 10},
		{Interval: 10, Duration: 0},
		{Interval: -1, Duration: 10},
		{Origin: -1, Interval: 1, Duration: 10},
		{Interval: 1, Duration: 1<<63 - 1},
	}
	for _, g := range bad {
		if err := g.Check(); err == nil {
			t.Errorf("Check(%+v) accepted it", g)
		}
	}
}
