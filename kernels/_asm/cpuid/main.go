// Command cpuid generates cpuid_amd64.s: the CPUID instruction for package kernels, which needs what
// golang.org/x/sys/cpu does not report (VAES and VPCLMULQDQ on CPUs without AVX-512; the vendor,
// family and model that key the dispatch table). Run it through go generate in the kernels directory.
package main

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/reg"
)

func main() {
	Package("github.com/wirebatch/wirebatch/kernels")
	ConstraintExpr("gc,!purego")

	Implement("cpuid")
	Attributes(NOSPLIT)
	Doc("cpuid executes CPUID with EAX = leaf and ECX = sub and returns EAX, EBX, ECX and EDX.")
	Load(Param("leaf"), EAX)
	Load(Param("sub"), ECX)
	CPUID()
	Store(EAX, ReturnIndex(0))
	Store(EBX, ReturnIndex(1))
	Store(ECX, ReturnIndex(2))
	Store(EDX, ReturnIndex(3))
	RET()
	Generate()
}
