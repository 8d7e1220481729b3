// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

// Package benchshape holds the batch shapes of `make bench` (kernels/bench_test.go), so that the
// comparisons run elsewhere (bench/ipsecmb) measure exactly the same batches: each a list of
// plaintext lengths, one per op, and how many distinct keys the ops cycle through; and Paired, the
// one way a batch path and its per-packet baseline are timed against each other.
package benchshape

import (
	"math/rand/v2"
	"testing"
	"time"
)

// Workload is a batch shape: the plaintext length of each op and how many distinct keys the ops
// cycle through.
type Workload struct {
	Name string
	Lens []int
	Keys int
}

// Workloads are the shapes the kernels benchmarks report.
var Workloads = []Workload{
	{"1420x64", Repeat(1420, 64), 1},         // a full batch of MTU-sized packets to one peer
	{"1420x64-keys64", Repeat(1420, 64), 64}, // the same, each packet to a different peer
	{"imix64", IMIX64(), 1},
	{"64x64", Repeat(64, 64), 1},   // small packets: per-op overhead dominates
	{"1420x1", Repeat(1420, 1), 1}, // batch of one: must not lose to the baseline
	{"64x1", Repeat(64, 1), 1},     // one small packet (a keepalive or an ACK)
	{"1420x4", Repeat(1420, 4), 1}, // a few packets: below the lanes' break-even on some CPUs
	{"1420x8", Repeat(1420, 8), 1}, // the fewest ops the lanes may take
}

// Repeat returns count lengths of n.
func Repeat(n, count int) []int {
	lens := make([]int, count)
	for i := range lens {
		lens[i] = n
	}
	return lens
}

// IMIX64 is 64 packets of the simple IMIX, 64, 576 and 1500 bytes in the ratio 7:4:1 (37, 21 and 6
// of 64), shuffled with a fixed seed so every run and every implementation sees the same order.
func IMIX64() []int {
	lens := append(append(Repeat(64, 37), Repeat(576, 21)...), Repeat(1500, 6)...)
	r := rand.New(rand.NewPCG(1420, 64))
	r.Shuffle(len(lens), func(i, j int) { lens[i], lens[j] = lens[j], lens[i] })
	return lens
}

// The units of the ratio a paired benchmark reports, base's time over ours. `make bench`
// (internal/benchtable) flags every vs-baseline row below 1.00x: ours is the default path, which
// must never lose to the standard library. A forced path (a tier or a route the dispatch does not
// take on this CPU) reports forced-vs-baseline, which is listed but not flagged.
const (
	RatioUnit       = "vs-baseline"
	ForcedRatioUnit = "forced-vs-baseline"
)

// Paired times ours, the default path, and base alternately in every iteration of b (the order
// flipping each time), so a noisy neighbour slows both alike, and reports each one's ns/pkt and the
// ratio vs-baseline (base's time over ours). packets is how many packets one call of either
// handles; each is called often enough per iteration to cover 64 packets.
func Paired(b *testing.B, packets int, ours, base func()) {
	paired(b, RatioUnit, packets, nil, ours, base)
}

// PairedReset is Paired for work that consumes its input, such as decryption in place: reset, when
// not nil, restores the input before every call of ours or base and is not timed, so neither side is
// charged for the harness's restoring and both start from the same state of the caches.
func PairedReset(b *testing.B, packets int, reset, ours, base func()) {
	paired(b, RatioUnit, packets, reset, ours, base)
}

// PairedForced is Paired for a path that the dispatch does not choose on this CPU, forced for a
// measurement; its ratio is reported as forced-vs-baseline.
func PairedForced(b *testing.B, packets int, ours, base func()) {
	paired(b, ForcedRatioUnit, packets, nil, ours, base)
}

func paired(b *testing.B, unit string, packets int, reset, ours, base func()) {
	reps := (64 + packets - 1) / packets
	sides := [2]func(){ours, base}
	var spent [2]time.Duration
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		for k := range 2 {
			side := (i + k) % 2
			if reset == nil {
				t0 := time.Now()
				for range reps {
					sides[side]()
				}
				spent[side] += time.Since(t0)
				continue
			}
			for range reps {
				reset()
				t0 := time.Now()
				sides[side]()
				spent[side] += time.Since(t0)
			}
		}
	}
	n := float64(b.N * reps * packets)
	b.ReportMetric(float64(spent[0].Nanoseconds())/n, "ns/pkt")
	b.ReportMetric(float64(spent[1].Nanoseconds())/n, "baseline-ns/pkt")
	b.ReportMetric(float64(spent[1])/float64(spent[0]), unit)
}
