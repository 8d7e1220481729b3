//go:build gc && !purego

package pipeprobe

import (
	"testing"

	"golang.org/x/sys/cpu"
)

// iterations is the loop count of one call: long enough that the call's overhead vanishes.
const iterations = 1000

// BenchmarkPipes runs every loop and reports its rate in cycles of the clock calibrate measures in
// the same run: cycles per instruction for the latency loops (one dependent chain), instructions
// per cycle for the others.
func BenchmarkPipes(b *testing.B) {
	if !cpu.X86.HasAVX2 {
		b.Skip("needs AVX2")
	}
	var nsPerCycle float64
	var spill [2048]byte
	b.Run("calibrate", func(b *testing.B) {
		for b.Loop() {
			calibrate(iterations)
		}
		nsPerCycle = float64(b.Elapsed().Nanoseconds()) / float64(b.N) / iterations / 32
		b.ReportMetric(1/nsPerCycle, "GHz")
	})
	loops := []struct {
		name string
		run  func(int)
	}{
		{"latencyVPADDD", latencyVPADDD},
		{"latencyShiftShuffle", latencyShiftShuffle},
		{"throughputVPADDD", throughputVPADDD},
		{"throughputVPXOR", throughputVPXOR},
		{"throughputVPSLLD", throughputVPSLLD},
		{"throughputVPSHUFB", throughputVPSHUFB},
		{"throughputVPMULUDQ", throughputVPMULUDQ},
		{"throughputShiftShuffle", throughputShiftShuffle},
		{"quarterRounds8", quarterRounds8},
		{"quarterRounds8Skewed", quarterRounds8Skewed},
		{"quarterRounds12Skewed", quarterRounds12Skewed},
		{"quarterRounds8Spilled", func(n int) { quarterRounds8Spilled(n, &spill) }},
		{"quarterRounds12Spilled", func(n int) { quarterRounds12Spilled(n, &spill) }},
	}
	for _, l := range loops {
		ops, ok := opsPerIteration[l.name]
		if !ok {
			b.Fatalf("no instruction count for %s", l.name)
		}
		b.Run(l.name, func(b *testing.B) {
			for b.Loop() {
				l.run(iterations)
			}
			cycles := float64(b.Elapsed().Nanoseconds()) / nsPerCycle / float64(b.N) / iterations
			if l.name[:7] == "latency" {
				b.ReportMetric(cycles/float64(ops), "cycles/op")
			} else {
				b.ReportMetric(float64(ops)/cycles, "ops/cycle")
			}
		})
	}
	if len(loops) != len(opsPerIteration) {
		b.Errorf("%d loops benchmarked, %d generated", len(loops), len(opsPerIteration))
	}
}
