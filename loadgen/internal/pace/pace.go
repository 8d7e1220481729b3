// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

// Package pace schedules packets at a fixed rate in bursts: a token bucket
// whose tokens arrive one per 1/rate seconds and are spent a burst at a time.
//
// Sending a burst per wake-up, rather than a packet, is what lets a rate-
// limited sender sleep (clock.SleepUntil) instead of spinning: at 100k
// packets/s a burst of 64 is due every 640µs, far above the wake-up error of
// a thread with low timer slack. The schedule is absolute (burst k is due at
// start + k·burst/rate), so wake-up errors do not accumulate and the average
// rate is exact; a sender that falls behind catches up, but by at most
// MaxLag of traffic, the bucket's depth, so a long stall is not followed by a
// flood.
package pace

import "time"

// MaxLag is the most traffic, in time at the configured rate, that a sender
// that fell behind is allowed to catch up on. On a busy machine the
// scheduler can keep a runnable thread waiting for several time slices
// (tens of milliseconds); catching up on that keeps the offered count exact,
// which a throughput trial (RFC 2544 section 26.1) depends on.
const MaxLag = 100 * time.Millisecond

// MaxBurstSpan bounds a burst to this much time at the configured rate, so
// low rates are sent smoothly, one or a few packets at a time, not in
// batch-sized clumps.
const MaxBurstSpan = time.Millisecond

// Pacer hands out burst deadlines for one sender. It does not sleep itself.
type Pacer struct {
	start    int64   // clock origin, nanoseconds
	interval float64 // nanoseconds between packets
	burst    int
	next     float64 // due time of the next packet, nanoseconds after start
}

// New returns a Pacer for rate packets/s starting at start (nanoseconds on
// the caller's clock), in bursts of at most batch packets. rate and batch
// must be positive.
func New(rate float64, batch int, start int64) *Pacer {
	burst := min(batch, max(1, int(rate*MaxBurstSpan.Seconds())))
	return &Pacer{start: start, interval: float64(time.Second) / rate, burst: burst}
}

// Burst is the number of packets to send at each deadline Next returns.
func (p *Pacer) Burst() int { return p.burst }

// Next returns the time at which the next burst may be sent: when the
// bucket holds a burst's worth of tokens, that is when the burst's last
// packet is due. now is the current time on the same clock as start.
func (p *Pacer) Next(now int64) int64 {
	if lag := float64(now-p.start) - p.next; lag > float64(MaxLag) {
		p.next += lag - float64(MaxLag)
	}
	due := p.next + float64(p.burst-1)*p.interval
	p.next += float64(p.burst) * p.interval
	return p.start + int64(due)
}
