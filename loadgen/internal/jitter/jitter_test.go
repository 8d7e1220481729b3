// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package jitter

import "testing"

// TestWorkedExample follows RFC 3550 section 6.4.1's formulas by hand over
// a short stream (times in nanoseconds; the receiver's clock runs 1ms
// ahead of the sender's, which must not matter):
//
//	packet  S    R        transit  |D|  J
//	0       0    1001000  1001000       0
//	1       100  1001150  1001050  50   0 + (50-0)/16             = 3.125
//	2       200  1001230  1001030  20   3.125 + (20-3.125)/16     = 4.1796875
//	3       300  1001330  1001030  0    4.1796875 - 4.1796875/16  = 3.91845703125
//	4       300  1001400  (same burst as 3: not sampled)          = 3.91845703125
//	5       400  1001500  1001100  70   3.91845703125 + (70-3.91845703125)/16 = 8.048553466796875
//
// Every value is a dyadic fraction, so the float64 results are exact.
func TestWorkedExample(t *testing.T) {
	const offset = 1_000_000
	steps := []struct {
		send, arrival int64
		want          float64
	}{
		{0, offset + 1000, 0},
		{100, offset + 1150, 3.125},
		{200, offset + 1230, 4.1796875},
		{300, offset + 1330, 3.91845703125},
		{300, offset + 1400, 3.91845703125},
		{400, offset + 1500, 8.048553466796875},
	}
	var e Estimator
	for i, s := range steps {
		e.Observe(s.send, s.arrival)
		if got := e.Jitter(); got != s.want {
			t.Errorf("after packet %d: J = %v, want %v", i, got, s.want)
		}
		if e.Estimated() != (i > 0) {
			t.Errorf("after packet %d: Estimated() = %v", i, e.Estimated())
		}
	}
}

// TestClockOffsetCancels runs one stream against receiver clocks with
// different offsets, including one behind the sender's (negative transit
// times): the estimate must not change.
func TestClockOffsetCancels(t *testing.T) {
	arrivals := []int64{40, 95, 170, 230, 300, 420, 470}
	estimate := func(offset int64) float64 {
		var e Estimator
		for i, a := range arrivals {
			e.Observe(int64(i)*60, a+offset)
		}
		return e.Jitter()
	}
	want := estimate(0)
	if want == 0 {
		t.Fatal("a stream with varying transit times has zero jitter")
	}
	for _, offset := range []int64{-1 << 40, -5, 7, 1 << 50} {
		if got := estimate(offset); got != want {
			t.Errorf("offset %d: J = %v, want %v", offset, got, want)
		}
	}
}

// TestConstantTransitHasNoJitter: a stream that keeps its spacing has
// J = 0, whatever the spacing and the delay.
func TestConstantTransitHasNoJitter(t *testing.T) {
	var e Estimator
	for i := range int64(100) {
		e.Observe(i*i*1000, i*i*1000+250_000)
	}
	if e.Jitter() != 0 || !e.Estimated() {
		t.Errorf("J = %v (estimated %v), want 0", e.Jitter(), e.Estimated())
	}
}
