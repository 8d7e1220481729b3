// Command pipeprobe generates internal/pipeprobe's assembly: loops of AVX2 integer instructions
// whose dependencies are known, which time how this CPU's vector pipes issue the instruction mix of
// the AVX2 ChaCha20 kernel (kernels/_asm/chacha/chacha_avx2.go). Run it through go generate in
// internal/pipeprobe.
//
// Every loop body but the Spilled ones works on registers only (no memory operands, no stores), so
// what it measures is the pipes and the scheduler, not the caches. Y14 holds a VPSHUFB mask and Y15
// the other operand of every add and XOR; Y12 is the temporary of the two-shift rotations, which
// register renaming keeps from linking the chains that share it. The Spilled loops add the
// kernel's spill traffic (loads as memory operands, stores) to a buffer that stays in L1.
package main

import (
	"flag"
	"fmt"
	"go/format"
	"os"
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

// quarterRound is the instruction sequence of one ChaCha20 quarter round (RFC 8439 section 2.1) as
// one chain: each step reads what the step before it wrote, as a += b, d ^= a, d <<<= 16, c += d,
// ... do through a, d, c and b in turn.
var quarterRound = []step{add, xor, shufb, add, xor, rot(12), add, xor, shufb, add, xor, rot(7)}

// spilledStep emits step t (0 to 11) of the quarter round on chain k's register x as the AVX2
// kernel does with words kept in memory, the chain's words at spill+128k (a, b, c, d, 32 bytes
// each): a += b, d ^= a and c += d take a, d and c as memory operands and store what they computed
// back (d after its rotation); with bSpilled, b ^= c does too and b is stored after its rotation,
// else b stays in its register as in the kernel. It returns the vector ALU instructions emitted.
func spilledStep(t int, x VecPhysical, spill Register, k int, bSpilled bool) int {
	word := func(w int) Mem { return Mem{Base: spill, Disp: 128*k + 32*w} }
	const a, b, c, d = 0, 1, 2, 3
	switch t % 6 {
	case 0:
		VPADDD(word(a), x, x)
		VMOVDQU(x, word(a))
	case 1:
		VPXOR(word(d), x, x)
	case 2:
		VPSHUFB(Y14, x, x)
		VMOVDQU(x, word(d))
	case 3:
		VPADDD(word(c), x, x)
		VMOVDQU(x, word(c))
	case 4:
		if bSpilled {
			VPXOR(word(b), x, x)
		} else {
			VPXOR(Y15, x, x)
		}
	case 5:
		n := rot([2]int{12, 7}[t/6])(x) // the first half's rotation, then the second's
		if bSpilled {
			VMOVDQU(x, word(b))
		}
		return n
	}
	return 1
}

// spilledLoop generates func name(n int, spill *[2048]byte): n iterations of the quarter round on
// the chains of sets, set k skew*k steps off the first, with spilledStep's memory traffic.
func spilledLoop(name, doc string, sets [][]VecPhysical, skew int, bSpilled bool) {
	loop(name, doc, true, func(spill Register) int {
		ops := 0
		for t := range 12 {
			chain := 0
			for k, cs := range sets {
				for _, x := range cs {
					ops += spilledStep((t+k*skew)%12, x, spill, chain, bSpilled)
					chain++
				}
			}
		}
		return ops
	})
}

var opsOut = flag.String("ops", "", "file to write the instruction counts of the loops to")

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

func main() {
	ConstraintExpr("gc,!purego")
	TEXT("calibrate", NOSPLIT, "func(n int)")
	Doc("calibrate runs n iterations of 32 dependent scalar ADDs: one cycle each, the clock.")
	n := Load(Param("n"), GP64())
	x := GP64()
	XORQ(x, x)
	Label("calibrateloop")
	for range 32 {
		ADDQ(n, x)
	}
	DECQ(n)
	JNZ(LabelRef("calibrateloop"))
	RET()

	one := chains[:1]
	loop("latencyVPADDD", "runs one chain of dependent VPADDDs: their latency.", false,
		func(Register) int { return each(one, 32, add) })
	loop("latencyShiftShuffle", "runs one chain of dependent VPSLLDs and VPSHUFBs in turn.", false,
		func(Register) int { return each(one, 16, sll, shufb) })
	for _, k := range []struct {
		name string
		s    step
	}{{"VPADDD", add}, {"VPXOR", xor}, {"VPSLLD", sll}, {"VPSHUFB", shufb}, {"VPMULUDQ", mul}} {
		loop("throughput"+k.name, "runs 12 independent chains of "+k.name+": its issue rate.", false,
			func(Register) int { return each(chains, 4, k.s) })
	}
	loop("throughputShiftShuffle", "runs 12 independent chains of VPSLLD and VPSHUFB in turn.", false,
		func(Register) int { return each(chains, 2, sll, shufb) })
	loop("quarterRounds8", "runs the quarter round's sequence on 8 chains in lockstep, as the AVX2 "+
		"kernel's two groups of four chains did before avx2GroupSkew.", false,
		func(Register) int { return skewed([][]VecPhysical{chains[:8]}, 0, quarterRound) })
	loop("quarterRounds8Skewed", "is quarterRounds8 with chains 4-7 three steps off chains 0-3, as the "+
		"kernel's group 1 trails group 0.", false,
		func(Register) int { return skewed([][]VecPhysical{chains[:4], chains[4:8]}, 3, quarterRound) })
	loop("quarterRounds12Skewed", "runs the quarter round's sequence on 12 chains in three sets of four, "+
		"each three steps off the one before: one more group than 16 ymm registers leave room for.", false,
		func(Register) int {
			return skewed([][]VecPhysical{chains[:4], chains[4:8], chains[8:]}, 3, quarterRound)
		})
	spilledLoop("quarterRounds8Spilled", "is quarterRounds8Skewed with the AVX2 kernel's memory "+
		"traffic: a, c and d as memory operands and stored, b in its register.",
		[][]VecPhysical{chains[:4], chains[4:8]}, 3, false)
	spilledLoop("quarterRounds12Spilled", "is quarterRounds12Skewed with every word in memory, as 12 "+
		"chains need (48 words for 16 registers): b stored and read back too.",
		[][]VecPhysical{chains[:4], chains[4:8], chains[8:]}, 3, true)
	Generate()
	if *opsOut != "" {
		src := "// Code generated by command: go run main.go. DO NOT EDIT.\n\n//go:build gc && !purego\n\npackage pipeprobe\n\n" +
			"// opsPerIteration is each loop's number of vector instructions per iteration.\n" +
			"var opsPerIteration = map[string]int{\n" + counts.String() + "}\n"
		b, err := format.Source([]byte(src))
		if err == nil {
			err = os.WriteFile(*opsOut, b, 0o644)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
}
