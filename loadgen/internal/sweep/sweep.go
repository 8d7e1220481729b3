// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

// Package sweep searches for throughput as RFC 2544 section 26.1 defines it:
// the highest rate at which the device under test forwards all offered
// packets (here: loses at most a tolerated share), found by a binary search
// over trials at fixed rates.
package sweep

import (
	"errors"
	"fmt"
)

// Outcome is what one trial measured.
type Outcome struct {
	Offered   float64 `json:"pps_sent"`     // packets/s the sender achieved
	Delivered float64 `json:"pps_received"` // packets/s the receiver measured
	LossPct   float64 `json:"lost_percent"` // lost packets, percent of sent
}

// Trial is one step of a search.
type Trial struct {
	Rate float64 `json:"pps_requested"` // 0 is as fast as the sender can
	Outcome
	Pass bool `json:"pass"` // LossPct <= Params.MaxLossPct
}

// Params bound a search.
type Params struct {
	// MaxLossPct is the loss, in percent, a passing trial may have; RFC 2544
	// asks for 0.
	MaxLossPct float64
	// Resolution ends the search once the interval between the highest
	// passing and the lowest failing rate is below this fraction of the
	// latter.
	Resolution float64
	// MaxTrials bounds the number of trials, the first included.
	MaxTrials int
}

// Search runs trials and returns the throughput in packets/s (0 when even
// the lowest rate tried lost too much) and the trials in order.
//
// The first trial is at the sender's maximum rate: if it passes, its offered
// rate is the throughput, as the sender, not the path, was the limit.
// Otherwise the search halves the interval between 0 and that offered rate
// (RFC 2544 section 26.1 leaves the search strategy open; a binary search
// is the usual one).
func Search(p Params, trial func(rate float64) (Outcome, error)) (float64, []Trial, error) {
	if p.MaxLossPct < 0 || p.MaxLossPct >= 100 {
		return 0, nil, fmt.Errorf("max loss %v%%: want 0 to below 100", p.MaxLossPct)
	}
	if p.Resolution <= 0 || p.Resolution >= 1 {
		return 0, nil, fmt.Errorf("resolution %v: want a fraction between 0 and 1", p.Resolution)
	}
	if p.MaxTrials < 1 {
		return 0, nil, errors.New("max trials: want at least 1")
	}
	var trials []Trial
	run := func(rate float64) (bool, error) {
		o, err := trial(rate)
		if err != nil {
			return false, err
		}
		pass := o.LossPct <= p.MaxLossPct
		trials = append(trials, Trial{Rate: rate, Outcome: o, Pass: pass})
		return pass, nil
	}
	pass, err := run(0)
	if err != nil || pass {
		return trials[0].Offered, trials, err
	}
	lo, hi := 0.0, trials[0].Offered
	for len(trials) < p.MaxTrials && hi-lo > p.Resolution*hi {
		rate := (lo + hi) / 2
		if rate < 1 {
			break
		}
		pass, err := run(rate)
		if err != nil {
			return lo, trials, err
		}
		if pass {
			lo = rate
		} else {
			hi = rate
		}
	}
	return lo, trials, nil
}
