// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package main

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/reg"
)

// cpuid generates cpuid: CPUID with the leaf and sub-leaf of its parameters.
func cpuid() {
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
}
