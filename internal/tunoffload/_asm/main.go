// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

// Command checksum generates sum_amd64.s: the Internet checksum's word sum (RFC 1071) over AVX2 and
// over AVX-512 registers for package tunoffload. Run it through go generate in the package directory
// (sum_amd64.go); go.work puts the root module beside this one so that Package and Implement can
// take the signatures from the package's Go stubs.
package main

import . "github.com/mmcloughlin/avo/build"

func main() {
	Package("github.com/wirebatch/wirebatch/internal/tunoffload")
	ConstraintExpr("!purego")
	sumKernel(avx2)
	sumKernel(avx512)
	Generate()
}
