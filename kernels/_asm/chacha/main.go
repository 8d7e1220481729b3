// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

// Command chacha generates chacha_amd64.s, the multi-lane ChaCha20 and Poly1305 kernels of package
// kernels. Run it through go generate in the kernels directory.
//
// Every kernel is a small unit driven from Go (kernels/chacha_lanes.go and
// chacha_single_amd64.go): the Go driver decides which message runs in which lane and for how many
// blocks; the assembly only runs n blocks in every lane, bounded per call, and never branches on or
// indexes memory by secret data. Signatures come from the Go stubs in kernels/chacha_amd64.go
// (Package and Implement): go.work puts the root module beside this one so that the generator can
// load package kernels.
package main

import (
	. "github.com/mmcloughlin/avo/build"
)

func main() {
	Package("github.com/wirebatch/wirebatch/kernels")
	ConstraintExpr("gc,!purego")

	rotTables()
	poly26Tables()
	iotaTable()
	zeroTable()
	rowCounterTable()
	polyStepTables()
	tinyTables()
	chachaXOR16AVX512()
	chachaXOR16AVX2()
	chachaLanesAVX2Regs(2)
	chachaLanesAVX2Regs(1)
	chachaLanesMACAVX2Regs(2)
	chachaLanesMACAVX2Regs(1)
	chachaOneAVX2Regs(1, false)
	chachaOneAVX2Regs(2, false)
	chachaOneAVX2Regs(1, true)
	chachaOneAVX2(1, false)
	chachaOneAVX2(2, false)
	chachaOneAVX2(1, true)
	chachaKS4AVX2()
	xorBytesAVX2()
	chachaKS2Scalar()
	hchacha20AVX2(1)
	hchacha20AVX2(3)
	chachaHeads(false)
	chachaHeads(true)
	chachaHeads16AVX512()
	chachaPoly1305Tiny(false)
	chachaPoly1305Tiny(true)
	chachaPoly1305Tiny3AVX2()
	chachaPoly1305Tiny2AVX2()
	chachaPoly1305Tiny3PipeAVX2()
	chachaPoly1305TinyNAVX512(3)
	chachaPoly1305TinyNAVX512(2)
	chachaPoly1305SmallAVX512()
	chachaPoly1305LongAVX512()
	chachaXOR16OneAVX512()
	chachaKS8AVX512()
	chachaKS4AVX512()
	chachaKS24AVX512(false, false)
	chachaKS24AVX512(true, false)
	chachaKS24AVX512(true, true)
	poly1305IFMA(8, 16)
	poly1305IFMA(4, 16)
	poly1305AVX2(4)
	poly1305AVX2(2)
	poly1305AVX2Regs(4)
	poly1305AVX2Regs(2)
	poly1305AVX2Eight()
	poly1305IFMAOne()
	poly1305IFMAPowers()
	poly1305Finish()
	chachaLanesMACAVX512()
	poly1305IFMA(4, 8)

	Generate()
}
