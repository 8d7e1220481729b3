// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package pace

import (
	"testing"
	"time"
)

func TestBurstSize(t *testing.T) {
	tests := []struct {
		rate  float64
		batch int
		want  int
	}{
		{100_000, 64, 64}, // 100 packets per ms, capped by the batch
		{10_000, 64, 10},  // 1 ms of traffic
		{100, 64, 1},      // less than a packet per ms
		{1e9, 8, 8},
	}
	for _, tt := range tests {
		if got := New(tt.rate, tt.batch, 0).Burst(); got != tt.want {
			t.Errorf("New(%v, %d).Burst() = %d, want %d", tt.rate, tt.batch, got, tt.want)
		}
	}
}

func TestScheduleOnTime(t *testing.T) {
	const start = 1_000_000
	p := New(100_000, 64, start) // a packet every 10µs, bursts of 64
	now := int64(start)
	for k := range 1000 {
		due := p.Next(now)
		// Burst k's last packet is packet 64k+63, due at (64k+63)·10µs.
		if want := start + int64(64*k+63)*10_000; due != want {
			t.Fatalf("burst %d due at %d, want %d", k, due, want)
		}
		now = due
	}
}

func TestLateSenderCatchesUpAtMostMaxLag(t *testing.T) {
	p := New(1000, 1, 0) // a packet per ms
	p.Next(0)
	// Wake up a second late: only MaxLag of the missed packets are still due.
	late := int64(time.Second)
	immediate := 0
	for p.Next(late) <= late {
		immediate++
	}
	if want := int(MaxLag / time.Millisecond); immediate != want && immediate != want+1 {
		t.Errorf("%d packets due at once after a 1s stall, want about %d", immediate, want)
	}
}

func TestAverageRateIsExact(t *testing.T) {
	// A sender that always wakes 30µs late still averages the requested rate.
	p := New(100_000, 64, 0)
	var due int64
	const bursts = 10_000
	for range bursts {
		due = p.Next(due + 30_000)
	}
	packets := float64(bursts * p.Burst())
	rate := (packets - 1) / time.Duration(due).Seconds()
	if rate < 99_900 || rate > 100_100 {
		t.Errorf("average rate %.0f packets/s, want 100000 ± 0.1%%", rate)
	}
}
