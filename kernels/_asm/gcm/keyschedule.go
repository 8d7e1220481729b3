// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package main

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// subWord generates aesSubWord, the S-box step of expandAESKey (FIPS 197 section 5.2): AESENCLAST
// with a zero round key, on the word broadcast to all four columns so that ShiftRows moves only
// copies of it, applies SubBytes to each byte of the word.
func subWord() {
	Implement("aesSubWord")
	Attributes(NOSPLIT)
	w := Load(Param("w"), GP32())
	VMOVD(w, X0)
	VPSHUFD(U8(0), X0, X0)
	VPXOR(X1, X1, X1)
	VAESENCLAST(X1, X0, X0)
	VMOVD(X0, w)
	Store(w, ReturnIndex(0))
	VZEROUPPER()
	RET()
}
