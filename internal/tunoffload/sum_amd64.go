//go:build !purego

package tunoffload

import (
	"math/bits"

	"golang.org/x/sys/cpu"
)

//go:generate sh -c "cd ../../kernels/_asm/checksum && go run . -out ../../../internal/tunoffload/sum_amd64.s -pkg tunoffload"

// useAVX2 and useAVX512 report whether the CPU runs sumAVX2's and sumAVX512's instructions.
var (
	useAVX2   = cpu.X86.HasAVX2
	useAVX512 = cpu.X86.HasAVX512F
)

// sumAVX2 returns the sum, as integers, of the little-endian 16-bit words of b. len(b) is a multiple
// of 32 and at most 1 MiB (kernels/_asm/checksum).
//
//go:noescape
func sumAVX2(b []byte) uint64

// sumAVX512 is sumAVX2 over AVX-512 registers, twice the bytes per instruction: len(b) is a
// multiple of 64 and at most 1 MiB.
//
//go:noescape
func sumAVX512(b []byte) uint64

// sumWide adds the longest prefix of b that the vector kernels take (a multiple of 32 bytes, so the
// rest starts at a word boundary) to the unfolded sum initial, and returns the rest and the new sum.
// The kernels' sums are of byte-swapped words; ReverseBytes64 swaps them back (and permutes the
// 16-bit words of the 64-bit value, which their sum does not see).
func sumWide(b []byte, initial uint64) ([]byte, uint64) {
	for useAVX512 && len(b) >= 64 {
		n := min(len(b), 1<<20) &^ 63
		initial = add(initial, bits.ReverseBytes64(sumAVX512(b[:n])))
		b = b[n:]
	}
	for useAVX2 && len(b) >= 32 {
		n := min(len(b), 1<<20) &^ 31
		initial = add(initial, bits.ReverseBytes64(sumAVX2(b[:n])))
		b = b[n:]
	}
	return b, initial
}
