// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package clock

import (
	"runtime"
	"testing"
	"time"
)

func TestNowAdvancesWithTime(t *testing.T) {
	a := Now()
	time.Sleep(2 * time.Millisecond)
	b := Now()
	if d := time.Duration(b - a); d < 2*time.Millisecond || d > time.Second {
		t.Errorf("Now advanced by %v across a 2ms sleep", d)
	}
}

func TestSleepUntil(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := LowerTimerSlack(time.Microsecond); err != nil {
		t.Fatal(err)
	}
	deadline := Now() + int64(3*time.Millisecond)
	SleepUntil(deadline)
	late := time.Duration(Now() - deadline)
	if late < 0 {
		t.Fatalf("woke %v before the deadline", -late)
	}
	// Generous bound: the machine is shared, so only gross errors fail.
	if late > 50*time.Millisecond {
		t.Errorf("woke %v after the deadline", late)
	}
	// A deadline in the past returns at once.
	start := Now()
	SleepUntil(start - int64(time.Second))
	if d := time.Duration(Now() - start); d > 50*time.Millisecond {
		t.Errorf("sleeping until a past deadline took %v", d)
	}
}
