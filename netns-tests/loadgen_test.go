// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

// Package netnstests holds root-only end-to-end tests: hosts in network
// namespaces joined by veth links, built on package harness.
package netnstests

import (
	"context"
	"encoding/json"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/wirebatch/wirebatch/netns-tests/harness"
)

func TestMain(m *testing.M) { harness.Main(m) }

// loadgenReport holds the fields of "loadgen send -json" these tests check.
type loadgenReport struct {
	Sent        uint64  `json:"sent"`
	Received    uint64  `json:"received"`
	Lost        uint64  `json:"lost"`
	Duplicates  uint64  `json:"duplicates"`
	Reordered   uint64  `json:"reordered"`
	Corrupt     uint64  `json:"corrupt"`
	Stray       uint64  `json:"stray"` // packets of earlier runs
	PPSReceived float64 `json:"pps_received"`
	ReceiverGRO bool    `json:"receiver_gro"`
	LatencyUS   struct {
		P50 float64 `json:"p50"`
		Max float64 `json:"max"`
	} `json:"latency_us"`
	LatencyValid bool     `json:"latency_valid"`
	JitterUS     *float64 `json:"jitter_us"`
	Intervals    []struct {
		Start    float64  `json:"start"`
		End      float64  `json:"end"`
		Sent     uint64   `json:"sent"`
		Received uint64   `json:"received"`
		Lost     uint64   `json:"lost"`
		JitterUS *float64 `json:"jitter_us"`
	} `json:"intervals"`
}

// TestLoadgenAcrossVeth runs loadgen's receiver in one namespace and its
// sender in another, across a veth pair: paced traffic must arrive
// complete and intact, and GSO traffic at full speed intact; the JSON
// report must carry jitter, valid latency (the namespaces share a clock)
// and an interval series that adds up to the totals.
func TestLoadgenAcrossVeth(t *testing.T) {
	harness.Require(t)
	loadgen := harness.Build(t, "github.com/wirebatch/wirebatch/loadgen")
	sender, receiver := harness.NewPair(t)
	addr := receiver.Addr + ":9000"
	recv := receiver.Start(loadgen, "recv", "-listen", addr, "-quiet")

	tests := []struct {
		name     string
		args     []string
		complete bool // no loss expected
	}{
		{"paced 64B, 4 flows", []string{"-rate", "50k", "-size", "64", "-flows", "4"}, true},
		{"paced imix", []string{"-rate", "20k", "-size", "imix"}, true},
		{"max 1400B gso", []string{"-rate", "max", "-size", "1400", "-gso"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			args := append([]string{"send", "-to", addr, "-duration", "500ms", "-interval", "100ms", "-warmup", "100ms", "-json"}, tt.args...)
			var out []byte
			// The receiver may still be starting: retry while its control port refuses.
			for attempt := 0; ; attempt++ {
				var err error
				out, err = sender.Command(ctx, loadgen, args...).Output()
				if err == nil {
					break
				}
				var stderr string
				if ee, ok := err.(*exec.ExitError); ok {
					stderr = string(ee.Stderr)
				}
				if attempt < 20 && strings.Contains(stderr, "refused") {
					time.Sleep(50 * time.Millisecond)
					continue
				}
				t.Fatalf("loadgen %s: %v\n%s", strings.Join(args, " "), err, stderr)
			}
			var r loadgenReport
			if err := json.Unmarshal(out, &r); err != nil {
				t.Fatalf("loadgen printed %q: %v", out, err)
			}
			t.Logf("%s: sent %d, received %d, %.0f packets/s delivered, latency p50 %.1fµs", tt.name, r.Sent, r.Received, r.PPSReceived, r.LatencyUS.P50)
			if r.Sent == 0 || r.Received == 0 || r.Received > r.Sent || r.Duplicates != 0 || r.Corrupt != 0 {
				t.Errorf("report %+v: want packets sent and received, none invented, duplicated or corrupt", r)
			}
			if tt.complete && r.Lost != 0 {
				t.Errorf("lost %d of %d paced packets over an idle veth", r.Lost, r.Sent)
			}
			if r.LatencyUS.P50 <= 0 || r.LatencyUS.Max < r.LatencyUS.P50 || !r.LatencyValid {
				t.Errorf("latency %+v, valid %v: want valid figures between namespaces of one host", r.LatencyUS, r.LatencyValid)
			}
			if r.JitterUS == nil || *r.JitterUS < 0 {
				t.Errorf("jitter_us %v, want a figure >= 0", r.JitterUS)
			}
			if len(r.Intervals) != 5 {
				t.Fatalf("%d intervals, want 5 of 100ms: %+v", len(r.Intervals), r.Intervals)
			}
			var sent, received uint64
			for k, iv := range r.Intervals {
				if iv.End-iv.Start < 0.0999 || iv.End-iv.Start > 0.1001 || iv.JitterUS == nil || iv.Received+iv.Lost != iv.Sent {
					t.Errorf("interval %d: %+v", k, iv)
				}
				sent += iv.Sent
				received += iv.Received
			}
			if sent != r.Sent || received != r.Received {
				t.Errorf("intervals add up to %d sent, %d received; the totals are %d and %d", sent, received, r.Sent, r.Received)
			}
		})
	}
	if err := recv.Stop(5 * time.Second); err != nil {
		t.Errorf("loadgen recv did not exit cleanly on SIGINT: %v\n%s", err, recv.Stderr())
	}
	// One summary per run, besides the receiver's interval lines.
	if got := len(regexp.MustCompile(`(?m)^run \d+: `).FindAllString(recv.Stdout(), -1)); got != len(tests) {
		t.Errorf("receiver reported %d runs, want %d:\n%s", got, len(tests), recv.Stdout())
	}
}
