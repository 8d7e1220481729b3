//go:build gc && !purego

package kernels

import (
	"unsafe"

	"golang.org/x/sys/cpu"
)

//go:generate sh -c "cd _asm/chacha && go run . -out ../../chacha_amd64.s -pkg kernels"

// CPU features of the ChaCha-family SIMD tiers, read once. The AVX512 tier needs F for the zmm
// ChaCha20 lanes (VPROLD, VSHUFI32X4), VL and BW as every AVX512 tier does, and IFMA for its
// radix-2^44 Poly1305 lanes.
var (
	chachaAVX512 = cpu.X86.HasAVX512F && cpu.X86.HasAVX512VL && cpu.X86.HasAVX512BW &&
		cpu.X86.HasAVX512IFMA
)

// chachaHasSIMD reports whether this build has ChaCha-family code of SIMD tier t that this CPU runs.
func chachaHasSIMD(t Tier) bool {
	return t == AVX512 && chachaAVX512
}

// chachaRunSIMD processes the ChaCha-family ops of ops on SIMD tier t (one chachaHasSIMD reports).
func chachaRunSIMD(t Tier, ops []Op, open bool) (failed int) {
	return chachaRunLanes(ops, open)
}

// chachaPtrs16 holds the 16 lanes' buffers for chachaXOR16: lane l reads block src[l]+off[l] and
// writes dst[l]+off[l], then adds stride[l] to off[l]. The generator (_asm/chacha) hard-codes this
// layout.
type chachaPtrs16 struct {
	src, dst    [16]unsafe.Pointer
	off, stride [16]uintptr
}

// polyPtrs8 holds the 8 lanes' message buffers for poly1305IFMA8, as chachaPtrs16 does.
type polyPtrs8 struct {
	base        [8]unsafe.Pointer
	off, stride [8]uintptr
}

//go:noescape
func chachaXOR16(rows *[17][16]uint32, lanes *chachaPtrs16, n int)

//go:noescape
func poly1305IFMA8(st *[8][8]uint64, p *polyPtrs8, n int)
