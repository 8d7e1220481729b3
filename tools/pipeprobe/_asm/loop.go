// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package main

import (
	"fmt"
	"strings"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

var chains = []VecPhysical{Y0, Y1, Y2, Y3, Y4, Y5, Y6, Y7, Y8, Y9, Y10, Y11}

// step emits one step of a chain on register x and returns how many instructions it took.
type step func(x VecPhysical) int

var (
	add   step = func(x VecPhysical) int { VPADDD(Y15, x, x); return 1 }
	xor   step = func(x VecPhysical) int { VPXOR(Y15, x, x); return 1 }
	sll   step = func(x VecPhysical) int { VPSLLD(U8(7), x, x); return 1 }
	shufb step = func(x VecPhysical) int { VPSHUFB(Y14, x, x); return 1 }
	mul   step = func(x VecPhysical) int { VPMULUDQ(Y15, x, x); return 1 }
	// rot emits a rotation by 12 or 7 as the AVX2 kernel does: two shifts of x, then an OR.
	rot = func(k int) step {
		return func(x VecPhysical) int {
			VPSLLD(U8(k), x, Y12)
			VPSRLD(U8(32-k), x, x)
			VPOR(Y12, x, x)
			return 3
		}
	}
)

// counts records each loop's vector instructions per iteration, for the benchmarks' rates.
var counts strings.Builder

// loop generates func name(n int), or with spilled func name(n int, spill *[2048]byte): n iterations
// of body, which emits one iteration (spill holding the buffer's address if spilled) and returns the
// number of vector ALU instructions it emitted.
func loop(name, doc string, spilled bool, body func(spill Register) int) {
	signature := "func(n int)"
	if spilled {
		signature = "func(n int, spill *[2048]byte)"
	}
	TEXT(name, NOSPLIT, signature)
	Doc(name + " " + doc)
	n := Load(Param("n"), GP64())
	var spill Register
	if spilled {
		spill = Load(Param("spill"), GP64())
	}
	VPXOR(Y15, Y15, Y15)
	VPXOR(Y14, Y14, Y14)
	Label(name + "loop")
	ops := body(spill)
	DECQ(n)
	JNZ(LabelRef(name + "loop"))
	VZEROUPPER()
	RET()
	fmt.Fprintf(&counts, "\t%q: %d,\n", name, ops)
}

// each runs s on every register of cs in turn, reps times.
func each(cs []VecPhysical, reps int, s ...step) int {
	ops := 0
	for range reps {
		for _, st := range s {
			for _, x := range cs {
				ops += st(x)
			}
		}
	}
	return ops
}

// skewed runs one pass of seq on the chains of each set, set k starting k*skew steps into the
// sequence (the loop repeats, so it runs those steps ahead), step by step across the sets.
func skewed(sets [][]VecPhysical, skew int, seq []step) int {
	ops := 0
	for t := range seq {
		for k, cs := range sets {
			s := seq[(t+k*skew)%len(seq)]
			for _, x := range cs {
				ops += s(x)
			}
		}
	}
	return ops
}
