// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

// Package jitter estimates interarrival jitter as RFC 3550 section 6.4.1
// defines it for RTP: for packets i and j,
//
//	D(i,j) = (Rj - Ri) - (Sj - Si) = (Rj - Sj) - (Ri - Si)
//
// where S is a packet's send time on the sender's clock and R its arrival
// time on the receiver's, and after each packet i
//
//	J(i) = J(i-1) + (|D(i-1,i)| - J(i-1))/16
//
// the gain 1/16 giving "a good noise reduction ratio while maintaining a
// reasonable rate of convergence". Only differences of transit times R - S
// enter, so a constant offset between the two clocks cancels out: jitter is
// measurable between hosts whose clocks are unrelated, unlike one-way
// latency. (A difference in clock rate remains, a few parts per million:
// nanoseconds per millisecond between packets.)
//
// RFC 3550 takes packets in arrival order, whatever their sequence numbers
// (appendix A.8), and so does Estimator. A loadgen sender stamps a whole
// burst with one send time, so the packets of a burst after its first carry
// no send time of their own: Estimator samples only packets whose send time
// differs from the previous sampled packet's, one per burst, and jitter is
// the variation of the bursts' transit times.
package jitter

// gain is RFC 3550's 1/16.
const gain = 16

// Estimator is the jitter estimate of one packet stream, one flow of a
// run. The zero value has seen no packet.
type Estimator struct {
	jitter      float64 // J, nanoseconds
	lastSend    int64
	lastTransit int64
	samples     uint64 // packets sampled: J has samples-1 differences in it
}

// Observe accounts a packet sent at send (sender's clock, nanoseconds) that
// arrived at arrival (receiver's clock, nanoseconds).
func (e *Estimator) Observe(send, arrival int64) {
	if e.samples > 0 && send == e.lastSend {
		return // the same burst as the last sample
	}
	transit := arrival - send
	if e.samples > 0 {
		d := float64(transit - e.lastTransit)
		if d < 0 {
			d = -d
		}
		e.jitter += (d - e.jitter) / gain
	}
	e.lastSend, e.lastTransit = send, transit
	e.samples++
}

// Jitter returns the estimate J in nanoseconds; 0 until Estimated.
func (e *Estimator) Jitter() float64 { return e.jitter }

// Estimated reports whether J holds at least one transit-time difference.
func (e *Estimator) Estimated() bool { return e.samples > 1 }
