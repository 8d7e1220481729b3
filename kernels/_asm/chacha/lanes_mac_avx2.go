// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// Offsets in laneMAC (kernels/chacha_lanes_mac.go); TestChaChaTableLayout checks them.
const (
	laneMACDone  = 0          // bytes of the current lane's blocks absorbed
	laneMACLane  = 8          // the current lane
	laneMACLanes = 16         // lanes with blocks
	laneMACSize  = 24         // bytes of blocks per lane
	laneMACEnd   = 32         // the end of the current lane's blocks, then its r0 and r1, while a call runs
	laneMACState = 56         // [16]poly1305, 56 bytes each
	laneMACMsg   = 56 + 16*56 // [16] the lanes' first blocks
	poly1305Size = 7 * 8      // r0, r1, h[3], s0, s1
	poly1305H    = 2 * 8      // offset of h in poly1305
)

// chachaLanesMACAVX2Regs generates chachaXOR16MACAVX2Regs and chachaXOR8MACAVX2Regs: the register
// lane kernels of chacha_avx2_regs.go with other messages' Poly1305 (RFC 8439 section 2.5) on the
// scalar pipes, which the rounds leave idle. The MAC is one chain at a time, lane after lane of mac
// (whole 16-byte blocks, the same number for every lane), three blocks a double round as in the
// single-message MAC kernel (macPoints): a chain's blocks depend on each other, so more would stall
// the rounds. A call with n = 0 absorbs what is left of every lane's blocks.
func chachaLanesMACAVX2Regs(groups int) {
	name := fmt.Sprintf("chachaXOR%dMACAVX2Regs", 8*groups)
	Implement(name)
	Attributes(NOSPLIT)
	Doc(name+fmt.Sprintf(" is chachaXOR%dAVX2Regs that also absorbs the blocks of mac's lanes", 8*groups),
		"beside its rounds; with n = 0, all that are left.")
	nM, strideM := paramAddr("n"), paramAddr("stride")
	c := startLaneChain()

	rows, off := stitchedStreamStart(name, nM)
	Label(name + "block")
	{
		o := GP64()
		MOVQ(off, o)
		lastApart(name, rows, nM, o, groups)
	}
	for g := range groups {
		regsGroup(rows, g, fmt.Sprintf("%srounds%d", name, g), func(k int) {
			if macPoints[k] {
				labels++
				skip := fmt.Sprintf("%smac%d_%d", name, k, labels)
				c.step(skip, skip)
			}
		})
		o := GP64()
		MOVQ(off, o)
		xorGroup8(rows, g, o)
	}
	o := GP64()
	MOVQ(off, o)
	ADDQ(strideM, o)
	MOVQ(o, off)
	DECQ(nM)
	JNZ(LabelRef(name + "block"))
	VZEROUPPER()
	JMP(LabelRef(name + "save"))

	c.finish(name)
}

// laneChain is the Poly1305 chain of a stitched lane kernel in registers for the whole call: the
// accumulator h of the laneMAC's current lane and p, its next block.
type laneChain struct {
	h [3]GPVirtual
	p GPVirtual
}

// startLaneChain loads the chain where the laneMAC argument mac left it.
func startLaneChain() laneChain {
	c := laneChain{h: [3]GPVirtual{GP64(), GP64(), GP64()}, p: GP64()}
	m := laneMACArg()
	lane := GP64()
	MOVQ(m.Offset(laneMACLane), lane)
	startChain(m, lane, c.h, c.p)
	ADDQ(m.Offset(laneMACDone), c.p)
	return c
}

// step absorbs the next block of the chain, moving to the next lane at the end of one, unless
// every lane is done: then it jumps to finished (skip, which labels its end, in the rounds).
func (c laneChain) step(skip, finished string) {
	h, p := c.h, c.p
	m := laneMACArg()
	absorb := skip + "absorb"
	CMPQ(p, m.Offset(laneMACEnd))
	JB(LabelRef(absorb))
	lane := GP64()
	MOVQ(m.Offset(laneMACLane), lane)
	next := GP64()
	LEAQ(Mem{Base: lane, Disp: 1}, next)
	CMPQ(next, m.Offset(laneMACLanes))
	JAE(LabelRef(finished))
	Comment("The lane's blocks are done: its accumulator back, the next lane's in.")
	storeAccumulator(laneMACPoly(m, lane), h)
	MOVQ(next, m.Offset(laneMACLane))
	startChain(m, next, h, p)
	Label(absorb)
	r := Mem{Base: m.Base, Disp: laneMACEnd + 8} // the current lane's r0, r1
	polyBlock64(h[0], h[1], h[2], Mem{Base: p}, r, r.Offset(8))
	ADDQ(U8(16), p)
	Label(skip)
}

// stitchedStreamStart begins stitched kernel name's stream unless its argument n (at nM) is 0, when it
// jumps to the last-call loop (finish): it fills tab's address rows and returns tab and a zeroed
// offset in the frame, which advances by stride per block.
func stitchedStreamStart(name string, nM Mem) (rows, off Mem) {
	CMPQ(nM, U8(0))
	JE(LabelRef(name + "rest"))
	rows = Mem{Base: Load(Param("tab"), GP64())}
	laneAddresses(rows, Mem{Base: Load(Param("lanes"), GP64())})
	off = AllocLocal(8)
	MOVQ(U32(0), off)
	return rows, off
}

// finish ends stitched kernel name: the n = 0 entry (name+"rest") absorbs every lane's remaining
// blocks, then name+"save" stores the chain's state back into mac and returns.
func (c laneChain) finish(name string) {
	Label(name + "rest")
	Comment("No stream blocks: every lane's remaining MAC blocks.")
	c.step(name+"reststep", name+"save")
	JMP(LabelRef(name + "rest"))

	Label(name + "save")
	c.save()
	RET()
}

// save stores the chain's state back into mac.
func (c laneChain) save() {
	Comment("The chain's state back into mac.")
	m := laneMACArg()
	lane := GP64()
	MOVQ(m.Offset(laneMACLane), lane)
	storeAccumulator(laneMACPoly(m, lane), c.h)
	SUBQ(Mem{Base: m.Base, Index: lane, Scale: 8, Disp: laneMACMsg}, c.p)
	MOVQ(c.p, m.Offset(laneMACDone))
}

// laneMACArg returns the laneMAC argument mac as a memory operand.
func laneMACArg() Mem { return Mem{Base: Load(Param("mac"), GP64())} }

// laneMACPoly returns the address of lane's poly1305 in the laneMAC at m.
func laneMACPoly(m Mem, lane Register) Mem {
	st := GP64()
	IMUL3Q(U8(poly1305Size), lane, st)
	ADDQ(m.Base, st)
	return Mem{Base: st, Disp: laneMACState}
}

// startChain loads lane's accumulator into h and the address of its first block into p, and
// stores the end of its blocks and its r in m, where the MAC steps read them.
func startChain(m Mem, lane Register, h [3]GPVirtual, p GPVirtual) {
	st := laneMACPoly(m, lane)
	for i := range h {
		MOVQ(st.Offset(poly1305H+8*i), h[i])
	}
	MOVQ(Mem{Base: m.Base, Index: lane, Scale: 8, Disp: laneMACMsg}, p)
	end := GP64()
	MOVQ(p, end)
	ADDQ(m.Offset(laneMACSize), end)
	MOVQ(end, m.Offset(laneMACEnd))
	for i := range 2 {
		r := GP64()
		MOVQ(st.Offset(8*i), r)
		MOVQ(r, m.Offset(laneMACEnd+8+8*i))
	}
}

// storeAccumulator stores h into the poly1305 at st.
func storeAccumulator(st Mem, h [3]GPVirtual) {
	for i := range h {
		MOVQ(h[i], st.Offset(poly1305H+8*i))
	}
}
