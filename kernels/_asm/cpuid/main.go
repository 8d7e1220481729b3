// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

// Command cpuid generates cpuid_amd64.s: the CPUID instruction for package kernels, which needs what
// golang.org/x/sys/cpu does not report (VAES and VPCLMULQDQ on CPUs without AVX-512; the vendor,
// family and model that key the dispatch table). Run it through go generate in the kernels directory.
package main

import . "github.com/mmcloughlin/avo/build"

func main() {
	Package("github.com/wirebatch/wirebatch/kernels")
	ConstraintExpr("gc,!purego")
	cpuid()
	Generate()
}
