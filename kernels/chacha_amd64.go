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

// polyZMM selects the Poly1305 kernel of the AVX512 tier. On the AMD EPYC (Zen 5) we develop on,
// poly1305IFMAZ absorbs 16 lanes x 4 KiB in 4.95 us against 5.93 us for poly1305IFMAY (best of six
// runs each); the zmm clock penalty of some Intel parts does not apply there.
const polyZMM = true

// polyKernel runs the selected Poly1305 kernel. It calls the stubs directly: a call through a func
// value would make the compiler move the lane tables to the heap.
func polyKernel(st *[9][16]uint64, p *polyPtrs16, n, stride int) {
	if polyZMM {
		poly1305IFMAZ(st, p, n, stride)
	} else {
		poly1305IFMAY(st, p, n, stride)
	}
}

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

// polyPtrs16 holds the 16 lanes' message buffers for poly1305IFMAZ and poly1305IFMAY: lane l reads
// block k at base[l]+off[l]+k*stride. The generator hard-codes this layout.
type polyPtrs16 struct {
	base [16]unsafe.Pointer
	off  [16]uintptr
}

//go:noescape
func chachaXOR16(rows *[17][16]uint32, lanes *chachaPtrs16, n int)

// poly1305IFMAZ and poly1305IFMAY are the same kernel on zmm (two groups of 8 lanes) and on ymm (four
// groups of 4 lanes).
//
//go:noescape
func poly1305IFMAZ(st *[9][16]uint64, p *polyPtrs16, n, stride int)

//go:noescape
func poly1305IFMAY(st *[9][16]uint64, p *polyPtrs16, n, stride int)
