//go:build !purego

package tunoffload

import (
	"math/bits"

	"golang.org/x/sys/cpu"
)

//go:generate sh -c "cd ../../kernels/_asm/checksum && go run . -out ../../../internal/tunoffload/sum_amd64.s -pkg tunoffload"

// useAVX2 reports whether the CPU runs sumAVX2's instructions.
var useAVX2 = cpu.X86.HasAVX2

// sumAVX2 returns the sum, as integers, of the little-endian 16-bit words of b. len(b) is a multiple
// of 32 and at most 1 MiB (kernels/_asm/checksum).
//
//go:noescape
func sumAVX2(b []byte) uint64

// sumWide adds the longest prefix of b that sumAVX2 takes (a multiple of 32 bytes, so the rest
// starts at a word boundary) to the unfolded sum initial, and returns the rest and the new sum.
// sumAVX2's sum is of byte-swapped words; ReverseBytes64 swaps them back (and permutes the 16-bit
// words of the 64-bit value, which their sum does not see), and the end-around carry keeps the sum
// modulo 2^16-1.
func sumWide(b []byte, initial uint64) ([]byte, uint64) {
	for useAVX2 && len(b) >= 32 {
		n := min(len(b), 1<<20) &^ 31
		s, c := bits.Add64(initial, bits.ReverseBytes64(sumAVX2(b[:n])), 0)
		initial = s + c // s is at most 2^64-2 if c is 1: no further carry
		b = b[n:]
	}
	return b, initial
}
