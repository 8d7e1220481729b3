// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

//go:build !amd64 || !gc || purego

package kernels

// This build has no ChaCha-family SIMD code: every tier runs the portable code.

// hchacha20SIMD is hchacha20: this build has no HChaCha20 kernel.
func hchacha20SIMD(out, key *[8]uint32, nonce *[16]byte) { hchacha20(out, key, nonce[:]) }

func chachaHasSIMD(t Tier) bool { return false }

func chachaRunSIMD(Tier, []Op, bool, *tinyOps) int {
	panic("kernels: no ChaCha SIMD code in this build")
}

func chachaRunOne(t Tier, op *Op, open bool) int {
	panic("kernels: no ChaCha SIMD code in this build")
}

func chachaSealPipeline([]Op, *pipeSeals) {
	panic("kernels: no ChaCha SIMD code in this build")
}

// tinyOps has nothing to run: this build has no fused one-call kernel for tiny ops, and no route
// names a tiny tier here.
type tinyOps struct{}

func newTinyOps(Tier, bool) tinyOps              { return tinyOps{} }
func (*tinyOps) fits(*Op) (n int, ok bool)       { return 0, false }
func (*tinyOps) run([]Op, int, int) (failed int) { return 0 }
func (*tinyOps) flush([]Op) (failed int)         { return 0 }
func (*tinyOps) inTriple(*Op) (n int, ok bool)   { return 0, false }
func (*tinyOps) took(*Op) bool                   { return false }
func (*tinyOps) chooseBeside([]Op) (n int)       { return 0 }
func (*tinyOps) planPipeline([]Op)               {}

func (*route) runFusedAlone(*Op, bool) (taken bool, failed int) { return false, 0 }

// The lane kernel set of this build (see laneKernels): the portable kernels, which the tests run
// the lane driver on. No tier does (see chacha_lanes.go).

func streamKernel(_ laneKernels, tab *streamTable, lanes *chachaPtrs16, n, stride int, upper bool) {
	chachaLanesGeneric(tab, lanes, n, stride, upper)
}

func streamMACKernel(_ laneKernels, tab *streamTable, lanes *chachaPtrs16, n, stride int, upper bool, mac *laneMAC) {
	streamMACGeneric(tab, lanes, n, stride, upper, mac)
}

func polyKernel(k laneKernels, st *[15][16]uint64, p *polyPtrs16, n, stride int, upper bool) {
	if k.radix44 {
		poly1305Lanes44Generic(st, p, n, stride)
		return
	}
	poly1305Lanes26Generic(st, p, n, stride, upper)
}

func polyFinishKernel(_ laneKernels, st *[15][16]uint64) (eq int) {
	return poly1305FinishLanes44Generic(st)
}

func laneOneOp(_ Tier, op *Op, open bool) bool { return chachaOpGeneric(op, open) }
