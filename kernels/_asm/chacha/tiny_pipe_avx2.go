// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// The three-op kernel as a pipeline: chachaPoly1305Tiny3AVX2 runs its ops' MACs after their rounds,
// one chain of dependent blocks after another, while its rounds leave the scalar pipes idle. Here a
// call runs the rounds of one triple and, beside them, the MACs of the triple before, whose MAC
// inputs (AD, ciphertext, lengths) the call before staged in a chachaTinyPipe; it then finishes
// those ops' tags and stages its own triple's for the next call. A last call without a triple
// finishes the pipeline. So a triple's ciphertext (Seal) is written by the call that runs its
// rounds and its tag by the next; an Open's plaintext only by the next, once its tag has matched.

// Offsets in chachaTinyPipeLane (kernels/chacha_tiny_amd64.go); TestChaChaTableLayout checks them.
const (
	pipeMAC    = 0   // [144]byte: AD, zero-padded to 16 bytes; ciphertext, zero-padded; lengths block
	pipeKS     = 144 // [64]byte: Open's key-stream block 1
	pipeR      = 208 // r, clamped
	pipeS      = 224 // s
	pipeH      = 240 // the accumulator, while the chain runs
	pipeBlocks = 264 // 16-byte blocks of the MAC's input
	pipeCt     = 272 // offset of the ciphertext in the MAC's input
	pipeN      = 280
	pipeSize   = 288
)

// pipeChain is the MAC chain of the previous triple in registers: the accumulator of the current
// lane and its next block p. The frame holds the lane, the end of its blocks and its r.
type pipeChain struct {
	h    [3]GPVirtual
	p    GPVirtual
	lane Mem
	end  Mem
	r    Mem
}

// pipeLane returns field off of lane (a register) of the chachaTinyPipe argument prev.
func pipeLane(lane Register, off int) Mem {
	base := GP64()
	IMUL3Q(U32(pipeSize), lane, base)
	ADDQ(Load(Param("prev"), GP64()), base)
	return Mem{Base: base, Disp: off}
}

// start points the chain at the first block of lane (a register): its h zero, its r in the frame.
func (c pipeChain) start(lane Register) {
	for _, h := range c.h {
		XORQ(h, h)
	}
	MOVQ(lane, c.lane)
	mac := pipeLane(lane, pipeMAC)
	LEAQ(mac, c.p)
	end := GP64()
	MOVQ(mac.Offset(pipeBlocks-pipeMAC), end)
	SHLQ(U8(4), end)
	ADDQ(c.p, end)
	MOVQ(end, c.end)
	for i := range 2 {
		r := GP64()
		MOVQ(mac.Offset(pipeR-pipeMAC+8*i), r)
		MOVQ(r, c.r.Offset(8*i))
	}
}

// step absorbs the chain's next block, moving to the next lane at the end of one (its accumulator
// back into prev), unless every lane is done; skip labels its end.
func (c pipeChain) step(skip string) {
	absorb := skip + "absorb"
	CMPQ(c.p, c.end)
	JB(LabelRef(absorb))
	lane := GP64()
	MOVQ(c.lane, lane)
	CMPQ(lane, U8(tinyLanes))
	JAE(LabelRef(skip))
	h := pipeLane(lane, pipeH)
	for i := range c.h {
		MOVQ(c.h[i], h.Offset(8*i))
	}
	INCQ(lane)
	MOVQ(lane, c.lane)
	CMPQ(lane, U8(tinyLanes))
	JAE(LabelRef(skip))
	c.start(lane)
	Label(absorb)
	polyBlock64(c.h[0], c.h[1], c.h[2], Mem{Base: c.p}, c.r, c.r.Offset(8))
	ADDQ(U8(16), c.p)
	Label(skip)
}

func chachaPoly1305Tiny3PipeAVX2() {
	const name = "chachaPoly1305Tiny3PipeAVX2"
	Implement(name)
	Attributes(NOSPLIT)
	Doc(name+" is chachaPoly1305Tiny3AVX2 as a pipeline stage: it runs the rounds of the three ops",
		"of lanes (none if lanes is nil; AD of at most 64 bytes each) and stages their MACs' input in",
		"cur (Seal writes each ciphertext now), and beside those rounds finishes the MACs of the",
		"triple that prev holds (if not nil), which the call before staged, whose ops' dst and tag",
		"out gives: Seal writes their tags, Open compares them in constant time and writes a lane's",
		"dst only where they match. It returns bit i set where prev's lane i succeeded. The caller",
		"wipes cur and prev.")
	c := pipeChain{h: [3]GPVirtual{GP64(), GP64(), GP64()}, p: GP64(),
		lane: AllocLocal(8), end: AllocLocal(8), r: AllocLocal(16)}

	Comment("The chain starts at prev's lane 0, or is done at once without prev.")
	{
		prev := Load(Param("prev"), GP64())
		TESTQ(prev, prev)
		JNZ(LabelRef(name + "chain"))
		MOVQ(U32(tinyLanes), c.lane)
		XORQ(c.p, c.p)
		MOVQ(c.p, c.end)
		JMP(LabelRef(name + "chained"))
		Label(name + "chain")
		lane := GP64()
		XORQ(lane, lane)
		c.start(lane)
		Label(name + "chained")
	}

	lanesArg := Load(Param("lanes"), GP64())
	TESTQ(lanesArg, lanesArg)
	JZ(LabelRef(name + "rest"))
	tinyPipeRounds(name, c)

	Comment("The chain's blocks the rounds left.")
	Label(name + "rest")
	CMPQ(c.lane, U8(tinyLanes))
	JAE(LabelRef(name + "tags"))
	c.step(name + "reststep")
	JMP(LabelRef(name + "rest"))

	Label(name + "tags")
	ok := GP64()
	XORQ(ok, ok)
	prev := Load(Param("prev"), GP64())
	TESTQ(prev, prev)
	JZ(LabelRef(name + "done"))
	tinyPipeTags(name, ok)
	Label(name + "done")
	Comment("Wipe r from the frame.")
	MOVQ(U32(0), c.r)
	MOVQ(U32(0), c.r.Offset(8))
	VZEROUPPER()
	Store(ok.As8(), ReturnIndex(0))
	RET()
}

// tinyPipeRounds stages the ops of the lanes argument in cur, runs their rounds with the chain c
// beside them and leaves their MACs' input, keys and outputs in cur.
func tinyPipeRounds(name string, c pipeChain) {
	lane := tinyLaneField
	cur := func(i, off int) Mem { return Mem{Base: Load(Param("cur"), GP64()), Disp: pipeSize*i + off} }
	// ct returns the address of op i's ciphertext in cur (a register, for a Mem base).
	ct := func(i int) GPVirtual {
		p := GP64()
		LEAQ(cur(i, pipeMAC), p)
		ADDQ(cur(i, pipeCt), p)
		return p
	}

	Comment("Stage each op's AD and message, zero-padded to 16 bytes each, in cur.")
	zero := YMM()
	VPXOR(zero, zero, zero)
	for i := range tinyLanes {
		lbl := fmt.Sprintf("%sstage%d", name, i)
		for off := 0; off < 128; off += 32 {
			VMOVDQU(zero, cur(i, pipeMAC+off))
		}
		VMOVDQU(zero.AsX(), cur(i, pipeMAC+128))
		adLen, d := lane(i, laneADLen), GP64()
		a := GP64()
		MOVQ(adLen, a)
		ADDQ(U8(15), a)
		ANDQ(I8(-16), a)
		MOVQ(a, cur(i, pipeCt))
		LEAQ(cur(i, pipeMAC), d)
		copyBytes(d, lane(i, laneAD), adLen, lbl+"ad")
		copyBytes(ct(i), lane(i, laneSrc), lane(i, laneN), lbl+"msg")
		MOVQ(lane(i, laneN), cur(i, pipeN))
	}

	Comment("The rounds: blocks 0 and 1 of every op, one state each, interleaved, each a step",
		"behind the one before (rowDoubleRoundsSkewed); the previous triple's MAC beside them.")
	x := tinyLaneStates(tinyLanes)
	rowDoubleRoundsSkewed(x, rotMasks, rotMasks.Offset(32), name+"rounds", func(k int) {
		if macPointsRow[k] {
			labels++
			c.step(fmt.Sprintf("%smac%d_%d", name, k, labels))
		}
	}, 1)

	Comment("Add the initial state (section 2.3). Block 0's rows 0 and 1 are the Poly1305 key;",
		"block 1 is the key stream: XORed into the staged message and written out (Seal, bytes",
		"past n zeroed for the MAC's padding) or kept for after the tag has matched (Open). Then",
		"the lengths block behind the ciphertext.")
	for s := range x {
		lbl := fmt.Sprintf("%sout%d", name, s)
		tinyLaneFinal(x[s], s, cur(s, pipeR), cur(s, pipeS))
		tinyLaneBlock1(x[s], s, func(c int) Mem { return Mem{Base: ct(s), Disp: 32 * c} }, cur(s, pipeKS), lbl,
			func() { copyBytes(lane(s, laneDst), ct(s), lane(s, laneN), lbl+"sealout") })
		n, at := lane(s, laneN), GP64()
		MOVQ(n, at)
		ADDQ(U8(15), at)
		ANDQ(I8(-16), at) // the padded ciphertext's length
		blocks := GP64()
		MOVQ(at, blocks)
		ADDQ(cur(s, pipeCt), blocks)
		SHRQ(U8(4), blocks)
		INCQ(blocks) // the AD's, the ciphertext's and the lengths block
		MOVQ(blocks, cur(s, pipeBlocks))
		ADDQ(ct(s), at)
		MOVQ(lane(s, laneADLen), Mem{Base: at})
		MOVQ(n, Mem{Base: at, Disp: 8})
	}
}

// macPointsRow are the points of rowDoubleRounds' double round (0 to 2) at which the pipeline
// absorbs a block of the previous triple's MACs: two of three, 20 blocks over the ten double rounds,
// the chain's 16 or so cycles a block within the rounds' time (a triple of 64-byte ops has 15).
var macPointsRow = [3]bool{0: true, 2: true}

// tinyPipeTags finishes the tags of prev's three ops (their dst and tag in the out argument) from
// the accumulators the chain left (tinyLaneVerdict: Seal writes them; Open, where they match,
// decrypts the staged ciphertext into dst). ok gets bit i where lane i succeeded.
func tinyPipeTags(name string, ok GPVirtual) {
	prev := func(i, off int) Mem { return Mem{Base: Load(Param("prev"), GP64()), Disp: pipeSize*i + off} }
	for i := range tinyLanes {
		lbl := fmt.Sprintf("%stag%d", name, i)
		h0, h1, h2 := GP64(), GP64(), GP64()
		MOVQ(prev(i, pipeH), h0)
		MOVQ(prev(i, pipeH+8), h1)
		MOVQ(prev(i, pipeH+16), h2)
		polyTag(h0, h1, h2, prev(i, pipeS))
		out := func(off int) GPVirtual {
			a := GP64()
			MOVQ(Mem{Base: Load(Param("out"), GP64()), Disp: laneSize*i + off}, a)
			return a
		}
		n := func() GPVirtual {
			k := GP64()
			MOVQ(prev(i, pipeN), k)
			return k
		}
		msg := func() GPVirtual {
			a := GP64()
			LEAQ(prev(i, pipeMAC), a)
			ADDQ(prev(i, pipeCt), a)
			return a
		}
		tinyLaneVerdict(lbl, i, h0, h1, Mem{Base: out(laneTag)}, ok, nil,
			tinyStagedDecrypt(lbl, prev(i, pipeKS), 64, n, msg, func() GPVirtual { return out(laneDst) }))
	}
}
