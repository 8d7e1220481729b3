// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

// Package clock reads and sleeps on CLOCK_MONOTONIC, the clock that loadgen
// stamps into payloads. It is one clock for all network namespaces of a host
// (namespaces do not virtualise it; time namespaces only offset it, and
// loadgen does not use them), so a sender and a receiver in different
// namespaces measure one-way latency against the same origin.
package clock

import (
	"time"

	"golang.org/x/sys/unix"
)

// Now returns CLOCK_MONOTONIC in nanoseconds.
func Now() int64 {
	var ts unix.Timespec
	// CLOCK_MONOTONIC is always present on Linux, so this can not fail.
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return ts.Nano()
}

// SleepUntil blocks the calling thread until CLOCK_MONOTONIC reaches
// deadline (nanoseconds). It uses clock_nanosleep with TIMER_ABSTIME, so a
// sleep interrupted by a signal resumes to the same deadline and lateness
// does not accumulate across calls; with the thread's timer slack lowered by
// LowerTimerSlack it wakes within a few microseconds, without spinning.
func SleepUntil(deadline int64) {
	ts := unix.NsecToTimespec(deadline)
	for unix.ClockNanosleep(unix.CLOCK_MONOTONIC, unix.TIMER_ABSTIME, &ts, nil) == unix.EINTR {
	}
}

// LowerTimerSlack sets the calling thread's timer slack to slack. Linux
// defers timer expiry by up to the slack (50µs by default) to batch
// wake-ups; a pacing thread wants its wake-ups on time. The caller should
// hold the thread with runtime.LockOSThread, as the setting is per thread.
func LowerTimerSlack(slack time.Duration) error {
	return unix.Prctl(unix.PR_SET_TIMERSLACK, uintptr(slack.Nanoseconds()), 0, 0, 0)
}

// ProcessCPU returns the user plus system CPU time this process has used, in
// nanoseconds (getrusage RUSAGE_SELF), or 0 if it can not be read.
func ProcessCPU() int64 {
	var ru unix.Rusage
	if unix.Getrusage(unix.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
