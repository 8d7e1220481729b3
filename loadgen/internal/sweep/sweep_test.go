// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package sweep

import (
	"errors"
	"testing"
)

// path models a link that forwards up to capacity packets/s and drops the
// excess, driven by a sender that reaches at most senderMax.
func path(capacity, senderMax float64, calls *int) func(float64) (Outcome, error) {
	return func(rate float64) (Outcome, error) {
		*calls++
		offered := senderMax
		if rate > 0 {
			offered = rate
		}
		delivered := min(offered, capacity)
		return Outcome{Offered: offered, Delivered: delivered, LossPct: 100 * (offered - delivered) / offered}, nil
	}
}

func TestSearchFindsCapacity(t *testing.T) {
	var calls int
	p := Params{MaxLossPct: 0, Resolution: 0.01, MaxTrials: 30}
	got, trials, err := Search(p, path(700_000, 1_000_000, &calls))
	if err != nil {
		t.Fatal(err)
	}
	if got > 700_000 || got < 700_000*(1-p.Resolution) {
		t.Errorf("throughput %.0f, want within 1%% below 700000", got)
	}
	if len(trials) != calls || trials[0].Rate != 0 || trials[0].Pass {
		t.Errorf("trials %+v: want the first at max rate, failing, and one per call (%d)", trials, calls)
	}
	for _, tr := range trials[1:] {
		if tr.Pass != (tr.Rate <= 700_000) {
			t.Errorf("trial at %.0f: pass = %v", tr.Rate, tr.Pass)
		}
	}
}

func TestSearchToleratesLoss(t *testing.T) {
	var calls int
	// 1% tolerated loss lets rates up to capacity/0.99 pass.
	got, _, err := Search(Params{MaxLossPct: 1, Resolution: 0.001, MaxTrials: 40}, path(99_000, 200_000, &calls))
	if err != nil {
		t.Fatal(err)
	}
	if got < 99_800 || got > 100_000 {
		t.Errorf("throughput %.0f, want just below 100000", got)
	}
}

func TestSearchSenderIsTheLimit(t *testing.T) {
	var calls int
	got, trials, err := Search(Params{Resolution: 0.01, MaxTrials: 30}, path(2e6, 1e6, &calls))
	if err != nil || got != 1e6 || len(trials) != 1 {
		t.Errorf("Search = %v, %d trials, %v; want 1e6 after one trial", got, len(trials), err)
	}
}

func TestSearchStopsAtMaxTrials(t *testing.T) {
	var calls int
	_, trials, err := Search(Params{Resolution: 1e-9, MaxTrials: 5}, path(123_456, 1e6, &calls))
	if err != nil || len(trials) != 5 {
		t.Errorf("%d trials, %v; want 5", len(trials), err)
	}
}

func TestSearchReportsTrialErrors(t *testing.T) {
	boom := errors.New("receiver gone")
	n := 0
	_, trials, err := Search(Params{Resolution: 0.01, MaxTrials: 10}, func(rate float64) (Outcome, error) {
		n++
		if n == 3 {
			return Outcome{}, boom
		}
		return Outcome{Offered: 1000, LossPct: 50}, nil
	})
	if !errors.Is(err, boom) || len(trials) != 2 {
		t.Errorf("err %v after %d trials; want %v after 2", err, len(trials), boom)
	}
}

func TestSearchRejectsBadParams(t *testing.T) {
	never := func(float64) (Outcome, error) { t.Fatal("trial run despite bad parameters"); return Outcome{}, nil }
	for _, p := range []Params{
		{MaxLossPct: -1, Resolution: 0.01, MaxTrials: 1},
		{MaxLossPct: 100, Resolution: 0.01, MaxTrials: 1},
		{Resolution: 0, MaxTrials: 1},
		{Resolution: 0.01, MaxTrials: 0},
	} {
		if _, _, err := Search(p, never); err == nil {
			t.Errorf("Search(%+v) succeeded", p)
		}
	}
}
