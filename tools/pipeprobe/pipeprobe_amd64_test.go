// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

//go:build gc && !purego

package pipeprobe

import (
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/cpu"
)

// iterations is the loop count of one call: long enough that the call's overhead vanishes.
const iterations = 1000

// BenchmarkPipes runs every loop and reports its rate in cycles of the clock that calibrate measures
// at the start: cycles per instruction for the latency loops (one dependent chain), instructions per
// cycle for the others, and the clock itself.
func BenchmarkPipes(b *testing.B) {
	if !cpu.X86.HasAVX2 {
		b.Skip("needs AVX2")
	}
	nsPerCycle := clock()
	var spill [2048]byte
	loops := probes(&spill)
	for _, l := range loops {
		ops := opsPerIteration[l.name]
		b.Run(l.name, func(b *testing.B) {
			if l.avx512 && !hasAVX512 {
				b.Skip("needs AVX-512 F, VL and IFMA")
			}
			for b.Loop() {
				l.run(iterations)
			}
			cycles := float64(b.Elapsed().Nanoseconds()) / nsPerCycle / float64(b.N) / iterations
			if strings.HasPrefix(l.name, "latency") {
				b.ReportMetric(cycles/float64(ops), "cycles/op")
			} else {
				b.ReportMetric(float64(ops)/cycles, "ops/cycle")
			}
			b.ReportMetric(1/nsPerCycle, "GHz")
		})
	}
}

// clock returns the nanoseconds per cycle of a chain of dependent scalar ADDs (one cycle each), the
// fastest of five runs of calibrate, so that a clock slowed by other work during one run does not
// count.
func clock() float64 {
	const n = 1 << 20
	best := time.Duration(1 << 62)
	for range 5 {
		start := time.Now()
		calibrate(n)
		best = min(best, time.Since(start))
	}
	return float64(best.Nanoseconds()) / n / 32
}

// probe is one generated loop under its name in opsPerIteration; avx512 if it needs AVX-512 F, VL
// and IFMA.
type probe struct {
	name   string
	run    func(n int)
	avx512 bool
}

// hasAVX512 reports whether this CPU runs the AVX-512 loops.
var hasAVX512 = cpu.X86.HasAVX512F && cpu.X86.HasAVX512VL && cpu.X86.HasAVX512IFMA

// probes lists every generated loop, the spilled ones working in spill.
func probes(spill *[2048]byte) []probe {
	return []probe{
		{"latencyVPADDD", latencyVPADDD, false},
		{"latencyShiftShuffle", latencyShiftShuffle, false},
		{"throughputVPADDD", throughputVPADDD, false},
		{"throughputVPXOR", throughputVPXOR, false},
		{"throughputVPSLLD", throughputVPSLLD, false},
		{"throughputVPSHUFB", throughputVPSHUFB, false},
		{"throughputVPMULUDQ", throughputVPMULUDQ, false},
		{"throughputShiftShuffle", throughputShiftShuffle, false},
		{"quarterRounds4", quarterRounds4, false},
		{"quarterRounds6", quarterRounds6, false},
		{"quarterRounds8", quarterRounds8, false},
		{"quarterRounds8Skewed", quarterRounds8Skewed, false},
		{"quarterRounds12Skewed", quarterRounds12Skewed, false},
		{"quarterRounds8Spilled", func(n int) { quarterRounds8Spilled(n, spill) }, false},
		{"quarterRounds12Spilled", func(n int) { quarterRounds12Spilled(n, spill) }, false},
		{"latencyVPMADD52LUQ", latencyVPMADD52LUQ, true},
		{"throughputVPADDDZ", throughputVPADDDZ, true},
		{"throughputVPROLDZ", throughputVPROLDZ, true},
		{"throughputVPMADD52LUQZ", throughputVPMADD52LUQZ, true},
		{"throughputVPMADD52LUQY", throughputVPMADD52LUQY, true},
		{"quarterRoundsZ8", quarterRoundsZ8, true},
		{"mixZ", mixZ, true},
		{"ifmaBesideAddZ", ifmaBesideAddZ, true},
		{"ifmaBesideInsertZ", ifmaBesideInsertZ, true},
	}
}

// TestProbes runs every loop a few iterations and checks that the loops here and the generator's
// instruction counts name the same loops, so that a loop added to one and not the other, or one
// that faults, fails go test rather than the benchmark.
func TestProbes(t *testing.T) {
	if !cpu.X86.HasAVX2 {
		t.Skip("needs AVX2")
	}
	var spill [2048]byte
	loops := probes(&spill)
	for _, l := range loops {
		if opsPerIteration[l.name] <= 0 {
			t.Errorf("%s: no instruction count from the generator", l.name)
		}
		if !l.avx512 || hasAVX512 {
			l.run(3)
		}
	}
	if len(loops) != len(opsPerIteration) {
		t.Errorf("%d loops here, %d counted by the generator", len(loops), len(opsPerIteration))
	}
}
