// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

//go:build gc && !purego

package kernels

//go:generate sh -c "cd _asm/cpuid && go run . -out ../../cpuid_amd64.s -pkg kernels"

// cpuid executes CPUID with EAX = leaf and ECX = sub (cpuid_amd64.s).
func cpuid(leaf, sub uint32) (eax, ebx, ecx, edx uint32)

// x86Family returns the CPU's vendor and its display family and model (CPUID leaf 1, with the
// extended fields as both vendors define them).
func x86Family() (vendor string, family, model uint32) {
	_, b, c, d := cpuid(0, 0)
	v := [12]byte{}
	for i, w := range [3]uint32{b, d, c} {
		v[4*i], v[4*i+1], v[4*i+2], v[4*i+3] = byte(w), byte(w>>8), byte(w>>16), byte(w>>24)
	}
	a, _, _, _ := cpuid(1, 0)
	family, model = a>>8&0xf, a>>4&0xf
	if family == 0xf {
		family += a >> 20 & 0xff
	}
	if family >= 6 {
		model |= a >> 16 & 0xf << 4
	}
	return string(v[:]), family, model
}

// hasVAESYMM reports VAES and VPCLMULQDQ, which run on ymm with AVX alone (CPUID leaf 7, ECX bits 9
// and 10). golang.org/x/sys/cpu reports them only on CPUs with AVX-512.
func hasVAESYMM() bool {
	_, _, c, _ := cpuid(7, 0)
	return c&(1<<9) != 0 && c&(1<<10) != 0
}

// ymmLatency2 reports a core whose ymm integer instructions take 2 cycles (AMD Zen 5, family 1Ah;
// tools/pipeprobe measures it): its AVX2 ChaCha20 kernel hides the latency with two groups of
// lanes in flight (chachaXOR16AVX2); 1-cycle cores keep one group in registers
// (chachaXOR16AVX2Regs).
var ymmLatency2 = func() bool {
	vendor, family, _ := x86Family()
	return vendor == "AuthenticAMD" && family >= 0x1a
}()

// thisCPU is the dispatch table's class of this CPU.
var thisCPU = func() cpuClass {
	vendor, _, _ := x86Family()
	switch {
	case vendor != "AuthenticAMD" && vendor != "GenuineIntel":
		return cpuUnmeasured
	case chachaHasSIMD(AVX512) && gcmHas(AVX512):
		return cpuAVX512
	case chachaHasSIMD(AVX2) && gcmHas(AVX2) && !ymmLatency2:
		return cpuAVX2Lat1
	}
	return cpuUnmeasured
}()
