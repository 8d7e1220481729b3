// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// ChaCha20 with one block per 32-bit lane (RFC 8439 section 2.3).
//
// rows is the transposed initial state: rows[w][l] is state word w of lane l, so one zmm holds one
// word of 16 independent blocks and a quarter round (section 2.1) on four zmm computes it for all 16
// lanes at once. rows[16][l] is the amount lane l's block counter (word 12) advances per block. The
// driver aligns rows to 64 bytes, so the per-block reloads never split a cache line.
//
// chachaPtrs16 (kernels/chacha_lanes.go) holds, at these offsets, per lane: the source and
// destination buffers and the offset of the lane's next 64-byte block in both; the kernel does not
// update them. The buffers' addresses never point past their ends, so the garbage collector always
// sees valid pointers. A nil buffer stands for the table itself: the driver keeps its lanes' scratch
// blocks behind the rows and addresses them by offset. The masked kernels and the AVX2 register
// kernels also read, per lane, the addresses of a call's last block where the driver sets them apart
// (xorLaneApart, lastApart).
const (
	ptrsSrc     = 0
	ptrsDst     = 16 * 8
	ptrsOff     = 32 * 8
	ptrsLastSrc = 48 * 8 // see xorLaneApart and lastApart
	ptrsLastDst = 64 * 8
	ptrsHasLast = 80 * 8 // nonzero where some lane's lastDst is set
)

// The kernels compute each lane's source and destination address once per call, into two rows of
// the table behind the 17 state rows: a block is then two loads of an address plus the iteration's
// offset, which all lanes share.
const (
	tabSrcAddr = 17 * 64
	tabDstAddr = tabSrcAddr + 16*8
	tabSpill   = tabDstAddr + 16*8 // 16 rows for a second state
	tabMask    = tabSpill + 16*64  // per lane, the byte mask of the call's last block
)

// Frame encodings for wipeLocal.
const (
	wipeScalar = iota // 8-byte stores of general registers
	wipeVEX           // AVX2 kernels: VEX ymm stores
	wipeEVEX          // AVX-512 kernels, whose virtual ymm registers may be Y16-Y31
)

// wipeLocal zeroes size bytes (a multiple of 8) of the frame at m before a kernel returns: what it
// spilled there (key stream, state words, a one-time key's powers) must not outlive the call on the
// goroutine stack, as the tiny kernels' buffers do not.
func wipeLocal(m Mem, size, enc int) {
	off := 0
	if enc != wipeScalar {
		// Loaded from a constant, not zeroed by XOR with itself: the register allocator would take
		// that for a use and keep z live from the kernel's entry.
		z := YMM()
		if enc == wipeEVEX {
			VMOVDQU64(zero32, z)
		} else {
			VMOVDQU(zero32, z)
		}
		for ; off+32 <= size; off += 32 {
			if enc == wipeEVEX {
				VMOVDQU64(z, m.Offset(off))
			} else {
				VMOVDQU(z, m.Offset(off))
			}
		}
	}
	for ; off < size; off += 8 {
		MOVQ(U32(0), m.Offset(off))
	}
}

// laneKernelStart loads a lane kernel's arguments (tab, lanes, n, stride), fills tab's address rows
// from lanes and returns tab as a memory operand, n, stride and a zeroed offset register, which
// advances by stride per block.
func laneKernelStart() (rows Mem, n, stride Register, off GPVirtual) {
	rows = Mem{Base: Load(Param("tab"), GP64())}
	lanes := Mem{Base: Load(Param("lanes"), GP64())}
	n = Load(Param("n"), GP64())
	stride = Load(Param("stride"), GP64())
	laneAddresses(rows, lanes)
	off = GP64()
	XORQ(off, off)
	return rows, n, stride, off
}

// laneAddresses fills the address rows of tab from lanes.
func laneAddresses(tab, lanes Mem) {
	for l := range 16 {
		for _, f := range []struct{ ptr, row int }{{ptrsSrc, tabSrcAddr}, {ptrsDst, tabDstAddr}} {
			a := GP64()
			MOVQ(lanes.Offset(f.ptr+8*l), a)
			TESTQ(a, a)
			CMOVQEQ(tab.Base, a)
			ADDQ(lanes.Offset(ptrsOff+8*l), a)
			MOVQ(a, tab.Offset(f.row+8*l))
		}
	}
}

// quarterRounds runs RFC 8439 section 2.1's quarter round on four independent (a, b, c, d) columns,
// interleaved so that consecutive instructions do not depend on each other.
func quarterRounds(x []VecVirtual, cols [4][4]int) { quarterRoundsHook(x, cols, nil) }

// quarterRoundsHook is quarterRounds with hook (if not nil) called after each of the quarter
// round's four add, XOR and rotate steps, numbered 0 to 3.
func quarterRoundsHook(x []VecVirtual, cols [4][4]int, hook func(k int)) {
	step := func(a, b, d int, rot uint8) {
		for _, c := range cols {
			VPADDD(x[c[b]], x[c[a]], x[c[a]])
		}
		for _, c := range cols {
			VPXORD(x[c[a]], x[c[d]], x[c[d]])
		}
		for _, c := range cols {
			VPROLD(U8(rot), x[c[d]], x[c[d]])
		}
	}
	for k, s := range [4]struct {
		a, b, d int
		rot     uint8
	}{
		{0, 1, 3, 16}, // a += b; d ^= a; d <<<= 16
		{2, 3, 1, 12}, // c += d; b ^= c; b <<<= 12
		{0, 1, 3, 8},  // a += b; d ^= a; d <<<= 8
		{2, 3, 1, 7},  // c += d; b ^= c; b <<<= 7
	} {
		step(s.a, s.b, s.d, s.rot)
		if hook != nil {
			hook(k)
		}
	}
}

func chachaXOR16AVX512() {
	Implement("chachaXOR16AVX512")
	Attributes(NOSPLIT)
	Doc("chachaXOR16AVX512 runs n ChaCha20 blocks in each of 16 lanes: the k-th block of lane l XORs its",
		"key-stream block into the 64 bytes at lanes.src[l]+lanes.off[l]+k*stride and writes them to",
		"lanes.dst[l]+lanes.off[l]+k*stride (src and dst may be equal), the last one (k = n-1) only the",
		"bytes of mask tab.mask[l], and from lanes.lastSrc[l] to lanes.lastDst[l] where that is set;",
		"each block advances the lane's block counter tab.rows[12][l] by tab.rows[16][l]. n >= 1.")
	rows, n, stride, off := laneKernelStart()

	Comment("Two blocks per lane while there are two: the rounds of one state are a chain of dependent",
		"steps that leaves the core half idle, so a second state in flight comes almost for free. The",
		"call's last block goes through each lane's byte mask (a partial last block of a message).")
	Label("two")
	CMPQ(n, U32(2))
	JBE(LabelRef("last"))
	xorBlocks(rows, off, stride, 2, false, nil)
	SUBQ(U32(2), n)
	JMP(LabelRef("two"))
	Label("last")
	JB(LabelRef("one"))
	xorBlocks(rows, off, stride, 2, true, nil)
	JMP(LabelRef("done"))
	Label("one")
	xorBlocks(rows, off, stride, 1, true, nil)
	Label("done")
	VZEROUPPER()
	RET()
}

// labels numbers the generated round loops, whose labels must be unique in the file.
var labels int

// xorBlocks emits the next states (one or two) blocks of all 16 lanes: the rounds of the states
// interleaved, then each state's transposition and XOR. The second state waits in tab's spill rows
// while the first one's transposition needs the registers. off advances by stride per block. With
// masked, the last state's block goes through the lanes' byte masks. hook, if not nil, is called
// at 8 points of each double round per state, numbered 0 to 8*states-1: after each step of each
// quarter-round set (quarterRoundsHook), the column round's sets first.
func xorBlocks(rows Mem, off Op, stride Op, states int, masked bool, hook func(k int)) {
	var x [2][]VecVirtual
	for s := range states {
		x[s] = make([]VecVirtual, 16)
		for i := range x[s] {
			x[s][i] = ZMM()
			VMOVDQA32(rows.Offset(64*i), x[s][i])
		}
	}
	if states == 2 {
		VPADDD(rows.Offset(64*16), x[1][12], x[1][12]) // the lanes' next block counters
	}
	Comment("Ten double rounds: columns, then diagonals (RFC 8439 section 2.3).")
	r := GP32()
	MOVL(U32(10), r)
	labels++
	loop := fmt.Sprintf("doubleround%d", labels)
	Label(loop)
	point := 0
	for _, cols := range [][4][4]int{
		{{0, 4, 8, 12}, {1, 5, 9, 13}, {2, 6, 10, 14}, {3, 7, 11, 15}},
		{{0, 5, 10, 15}, {1, 6, 11, 12}, {2, 7, 8, 13}, {3, 4, 9, 14}},
	} {
		for s := range states {
			quarterRoundsHook(x[s], cols, func(k int) {
				if hook != nil {
					hook(point + k)
				}
			})
			point += 4
		}
	}
	DECL(r)
	JNZ(LabelRef(loop))

	Comment("Add the initial states (section 2.3) and advance the block counters.")
	for s := range states {
		for i := range x[s] {
			VPADDD(rows.Offset(64*i), x[s][i], x[s][i])
		}
	}
	if states == 2 {
		VPADDD(rows.Offset(64*16), x[1][12], x[1][12])
		for i := range x[1] {
			VMOVDQA32(x[1][i], rows.Offset(tabSpill+64*i))
		}
	}
	c := ZMM()
	VMOVDQA32(rows.Offset(64*12), c)
	for range states {
		VPADDD(rows.Offset(64*16), c, c)
	}
	VMOVDQA32(c, rows.Offset(64*12))

	for s := range states {
		if s == 1 {
			for i := range x[1] {
				x[1][i] = ZMM()
				VMOVDQA32(rows.Offset(tabSpill+64*i), x[1][i])
			}
		}
		Comment("Transpose 16x16 words so that each zmm holds one lane's key-stream block, then XOR it",
			"with that lane's source into its destination.")
		o, inMem := off.(Mem)
		var at GPVirtual
		if inMem {
			at = GP64()
			MOVQ(o, at)
		} else {
			at = off.(GPVirtual)
		}
		blocks := transpose16(x[s])
		if masked && s == states-1 {
			// The lanes' own addresses unless the driver set some apart: calls that set none, all
			// but a Seal's first, run no more than the masked store.
			labels++
			apart, stored := fmt.Sprintf("lastapart%d", labels), fmt.Sprintf("laststored%d", labels)
			lanes := Mem{Base: Load(Param("lanes"), GP64())}
			CMPQ(lanes.Offset(ptrsHasLast), U8(0))
			JNE(LabelRef(apart))
			for l, blk := range blocks {
				xorLaneMasked(rows, l, at, blk)
			}
			JMP(LabelRef(stored))
			Label(apart)
			for l, blk := range blocks {
				xorLaneApart(rows, lanes, l, at, blk)
			}
			Label(stored)
		} else {
			for l, blk := range blocks {
				xorLane(rows, l, at, blk)
			}
		}
		ADDQ(stride, at)
		if inMem {
			MOVQ(at, o)
		}
	}
}

// xorLaneMasked is xorLane under lane l's byte mask: bytes outside it are neither read nor written.
func xorLaneMasked(tab Mem, l int, off GPVirtual, ks VecVirtual) {
	src, dst, t := GP64(), GP64(), ZMM()
	MOVQ(tab.Offset(tabSrcAddr+8*l), src)
	MOVQ(tab.Offset(tabDstAddr+8*l), dst)
	KMOVQ(tab.Offset(tabMask+8*l), K1)
	VMOVDQU8_Z(Mem{Base: src, Index: off, Scale: 1}, K1, t)
	VPXORD(t, ks, ks)
	VMOVDQU8(ks, K1, Mem{Base: dst, Index: off, Scale: 1})
}

// xorLaneApart is xorLaneMasked for a call whose lanes may have their last block's addresses set
// apart: where lanes.lastDst[l] is set, the block reads lanes.lastSrc[l] and writes lastDst[l]
// instead of its own addresses (Seal's first call puts block 1 straight into the message while
// block 0 goes to the lane's scratch).
func xorLaneApart(tab, lanes Mem, l int, off GPVirtual, ks VecVirtual) {
	src, dst, last, t := GP64(), GP64(), GP64(), ZMM()
	MOVQ(tab.Offset(tabSrcAddr+8*l), src)
	MOVQ(tab.Offset(tabDstAddr+8*l), dst)
	ADDQ(off, src)
	ADDQ(off, dst)
	MOVQ(lanes.Offset(ptrsLastDst+8*l), last)
	TESTQ(last, last)
	CMOVQNE(last, dst)
	CMOVQNE(lanes.Offset(ptrsLastSrc+8*l), src)
	KMOVQ(tab.Offset(tabMask+8*l), K1)
	VMOVDQU8_Z(Mem{Base: src}, K1, t)
	VPXORD(t, ks, ks)
	VMOVDQU8(ks, K1, Mem{Base: dst})
}

// transpose16 turns x, where x[w] holds state word w of 16 lanes, into 16 registers that hold one
// lane's 64-byte block each, in lane order.
func transpose16(x []VecVirtual) []VecVirtual {
	// After the dword and qword unpacks, q[4k+a] holds, in its 128-bit chunk j, the words 4k..4k+3
	// of lane 4j+a.
	var t, q [16]VecVirtual
	for k := 0; k < 16; k += 2 {
		t[k], t[k+1] = unpackDwords(x[k], x[k+1], ZMMv)
	}
	for k := 0; k < 16; k += 4 {
		*(*[4]VecVirtual)(q[k:]) = unpackQwords([4]VecVirtual(t[k:k+4]), ZMMv)
	}
	out := make([]VecVirtual, 16)
	for a := range 4 {
		// Gather chunk j of q[a], q[4+a], q[8+a], q[12+a] into lane 4j+a's block.
		lo01, lo23, hi01, hi23 := ZMM(), ZMM(), ZMM(), ZMM()
		VSHUFI32X4(U8(0x44), q[4+a], q[a], lo01)    // chunks 0,1 of q[a], then of q[4+a]
		VSHUFI32X4(U8(0x44), q[12+a], q[8+a], lo23) // chunks 0,1 of q[8+a], then of q[12+a]
		VSHUFI32X4(U8(0xee), q[4+a], q[a], hi01)    // chunks 2,3 likewise
		VSHUFI32X4(U8(0xee), q[12+a], q[8+a], hi23)
		for j := range 4 {
			first, second := lo01, lo23
			if j >= 2 {
				first, second = hi01, hi23
			}
			imm := U8(0x88) // even chunks of both
			if j%2 == 1 {
				imm = U8(0xdd) // odd chunks of both
			}
			out[4*j+a] = ZMM()
			VSHUFI32X4(imm, second, first, out[4*j+a])
		}
	}
	return out
}

// xorLane XORs key-stream block ks into lane l's block at byte off of its addresses.
func xorLane(tab Mem, l int, off GPVirtual, ks VecVirtual) {
	src, dst := GP64(), GP64()
	MOVQ(tab.Offset(tabSrcAddr+8*l), src)
	MOVQ(tab.Offset(tabDstAddr+8*l), dst)
	VPXORD(Mem{Base: src, Index: off, Scale: 1}, ks, ks)
	VMOVDQU64(ks, Mem{Base: dst, Index: off, Scale: 1})
}

// chachaXOR16OneAVX512 is the single-message kernel: 16 consecutive blocks of one message per pass, one per
// lane, so the state words are broadcast from st instead of coming from per-lane rows.
func chachaXOR16OneAVX512() {
	Implement("chachaXOR16OneAVX512")
	Attributes(NOSPLIT)
	Doc("chachaXOR16OneAVX512 XORs the n bytes at src with the key stream of state st (RFC 8439 section 2.3)",
		"from block counter st[12] on, into dst (src and dst may be equal). A last partial block is",
		"read and written under a byte mask. st is not updated. 0 < n <= 64 KiB.")
	st := Mem{Base: Load(Param("st"), GP64())}
	dst := Load(Param("dst"), GP64())
	src := Load(Param("src"), GP64())
	n := Load(Param("n"), GP64())
	ctr := GP32()
	MOVL(st.Offset(4*12), ctr)

	Label("pass")
	x := oneMessageBlocks(st, ZMM, func(z VecVirtual) { VPBROADCASTD(ctr, z) }, "onedoubleround")

	Comment("Transpose as in chachaXOR16AVX512; lane l's block is bytes 64l..64l+63 of this pass.")
	blocks := transpose16(x)
	for l, blk := range blocks {
		full := fmt.Sprintf("full%d", l)
		CMPQ(n, U32(64*(l+1)))
		JAE(LabelRef(full))
		Comment("The last block: n-64l bytes (none if n <= 64l) under a mask.")
		rem := GP64()
		MOVQ(n, rem)
		SUBQ(U32(64*l), rem)
		JLE(LabelRef("done"))
		ones, mask := GP64(), GP64()
		MOVQ(I64(-1), ones)
		BZHIQ(rem, ones, mask)
		KMOVQ(mask, K1)
		t := ZMM()
		VMOVDQU8_Z(Mem{Base: src, Disp: 64 * l}, K1, t)
		VPXORD(t, blk, blk)
		VMOVDQU8(blk, K1, Mem{Base: dst, Disp: 64 * l})
		JMP(LabelRef("done"))
		Label(full)
		VPXORD(Mem{Base: src, Disp: 64 * l}, blk, blk)
		VMOVDQU64(blk, Mem{Base: dst, Disp: 64 * l})
	}
	ADDQ(U32(1024), src)
	ADDQ(U32(1024), dst)
	ADDL(U32(16), ctr)
	SUBQ(U32(1024), n)
	JA(LabelRef("pass"))

	Label("done")
	VZEROUPPER()
	RET()
}

// iota16 holds 0, 1, ..., 23: the lanes' block offsets in the single-message kernels.
var iota16 Mem

func iotaTable() {
	iota16 = GLOBL("chachaIota", RODATA|NOPTR)
	for i := range 24 {
		DATA(4*i, U32(i))
	}
}

// zero32 holds 32 zero bytes, for wipeLocal.
var zero32 Mem

func zeroTable() {
	zero32 = GLOBL("chachaZero32", RODATA|NOPTR)
	for i := range 4 {
		DATA(8*i, U64(0))
	}
}

// rowCounters holds the block counter offsets of chachaKS4AVX512's four 128-bit chunks: 0, 1, 2, 3 in
// their first word (word 12 of the state), zero elsewhere; then 4, 5, 6, 7 and on, two a row-form
// state, for the states of chachaPoly1305SmallAVX512 (smallOpenStates).
var rowCounters Mem

func rowCounterTable() {
	rowCounters = GLOBL("chachaRowCounters", RODATA|NOPTR)
	for i := range 4 * 2 * smallOpenStates {
		v := 0
		if i%4 == 0 {
			v = i / 4
		}
		DATA(4*i, U32(v))
	}
}

// chachaKS4AVX512 runs four consecutive blocks in the rows of the state (RFC 8439 section 2.3): one zmm per
// row of four words, one block per 128-bit chunk. A quarter round then computes all four columns of
// all four blocks, and the diagonal round is the column round after rotating the words of rows 1-3
// within their chunks (VPSHUFD). That is a quarter of the instructions of one block per 32-bit lane,
// which for a message of at most three blocks (plus the Poly1305 key block) is what counts: the
// work of a short Seal or Open is one chain of dependent steps either way.
func chachaKS4AVX512() {
	Implement("chachaKS4AVX512")
	Attributes(NOSPLIT)
	Doc("chachaKS4AVX512 writes the 4 key-stream blocks from block counter st[12] on to out.")
	st := Mem{Base: Load(Param("st"), GP64())}
	out := Mem{Base: Load(Param("out"), GP64())}
	var x, in [4]VecVirtual
	for i := range x {
		x[i], in[i] = ZMM(), ZMM()
		VBROADCASTI32X4(st.Offset(16*i), in[i])
	}
	VPADDD(rowCounters, in[3], in[3])
	for i := range x {
		VMOVDQA32(in[i], x[i])
	}
	a, b, c, d := x[0], x[1], x[2], x[3]
	quarter := func() { // section 2.1 on the four columns of each block
		for _, rot := range [2][2]uint8{{16, 12}, {8, 7}} {
			VPADDD(b, a, a)
			VPXORD(a, d, d)
			VPROLD(U8(rot[0]), d, d)
			VPADDD(d, c, c)
			VPXORD(c, b, b)
			VPROLD(U8(rot[1]), b, b)
		}
	}
	r := GP32()
	MOVL(U32(10), r)
	Label("ks4doubleround")
	quarter()
	Comment("Diagonals to columns, relative to row 1 (whose last step ends the quarter round, so that",
		"no rotation waits for it): rows 0, 2 and 3 rotate their words by 1 right, 1 left, 2.")
	VPSHUFD(U8(0x93), a, a)
	VPSHUFD(U8(0x39), c, c)
	VPSHUFD(U8(0x4e), d, d)
	quarter()
	VPSHUFD(U8(0x39), a, a)
	VPSHUFD(U8(0x93), c, c)
	VPSHUFD(U8(0x4e), d, d)
	DECL(r)
	JNZ(LabelRef("ks4doubleround"))
	for i := range x {
		VPADDD(in[i], x[i], x[i])
		VMOVDQU32(x[i].AsX(), out.Offset(16*i))
		for j := 1; j < 4; j++ {
			VEXTRACTI32X4(U8(j), x[i], out.Offset(64*j+16*i))
		}
	}
	VZEROUPPER()
	RET()
}

// oneMessageBlocks computes consecutive key-stream blocks of the one ChaCha20 state st, one block per
// 32-bit lane of registers made by newVec: the state words are broadcast from st, lane l's counter is
// the one broadcastCounter puts in every lane plus l; ten double rounds (RFC 8439 section 2.3) run in a
// loop labelled loop, and the initial state is added back. It returns the 16 state rows.
func oneMessageBlocks(st Mem, newVec func() VecVirtual, broadcastCounter func(VecVirtual), loop string) []VecVirtual {
	x := make([]VecVirtual, 16)
	counters := func(z VecVirtual) { // lane l: block counter + l
		broadcastCounter(z)
		VPADDD(iota16, z, z)
	}
	for i := range x {
		x[i] = newVec()
		if i == 12 {
			counters(x[i])
			continue
		}
		VPBROADCASTD(st.Offset(4*i), x[i])
	}
	laneDoubleRounds(x, loop)
	for i := range x {
		if i == 12 {
			c := newVec()
			counters(c)
			VPADDD(c, x[i], x[i])
			continue
		}
		VPADDD_BCST(st.Offset(4*i), x[i], x[i])
	}
	return x
}

// laneDoubleRounds emits the ten double rounds (RFC 8439 section 2.3) of states held one word per
// register, x[w] word w of every lane, as a loop labelled loop.
func laneDoubleRounds(x []VecVirtual, loop string) {
	r := GP32()
	MOVL(U32(10), r)
	Label(loop)
	quarterRounds(x, [4][4]int{{0, 4, 8, 12}, {1, 5, 9, 13}, {2, 6, 10, 14}, {3, 7, 11, 15}})
	quarterRounds(x, [4][4]int{{0, 5, 10, 15}, {1, 6, 11, 12}, {2, 7, 8, 13}, {3, 4, 9, 14}})
	DECL(r)
	JNZ(LabelRef(loop))
}

// chachaHeads16AVX512 computes what chachaHeadsAVX512 does, sixteen inputs a pass, one per 32-bit
// lane of zmm: for a batch of header-protection samples (RFC 9001 section 5.4.4) the lanes' wide
// rounds beat row-form states, whose diagonal shuffles and quarter-filled rows cost more per block.
// An input is exactly the state's last row (the block counter, then the nonce words), so four zmm
// of inputs (input 4j+c in 128-bit chunk c of zmm j), transposed 4x4 within their chunks, are rows
// 12-15 with input 4j+c in lane 4c+j; rows 0-11 are the same in every lane. Only words 0-3 are
// outputs, and the same transposition takes them back to input order. A pass of fewer than sixteen
// inputs loads and stores under a mask, so nothing past input n-1 is read or written; a pass reads
// all its inputs before it writes, so out may be in. The rows that could be run back to the key
// (words 4-15 before the final addition) are zeroed before the next pass or the return.
func chachaHeads16AVX512() {
	Implement("chachaHeads16AVX512")
	Attributes(NOSPLIT)
	Doc("chachaHeads16AVX512 writes the first 16 bytes of the ChaCha20 block of key and in[i] to out[i], i < n.")
	out, key := Load(Param("out"), GP64()), Load(Param("key"), GP64())
	in, n := Load(Param("in"), GP64()), Load(Param("n"), GP64())
	Label("heads16pass")
	Comment("The pass's inputs as a dword mask: min(n, 16) inputs of four words, a 16-bit mask per zmm.")
	bits, sixteen, ones, mask := GP64(), GP64(), GP64(), GP64()
	MOVQ(n, bits)
	MOVQ(U32(16), sixteen)
	CMPQ(bits, sixteen)
	CMOVQGT(sixteen, bits)
	SHLQ(U8(2), bits)
	MOVQ(I64(-1), ones)
	BZHIQ(bits, ones, mask)
	ks := []Register{K1, K2, K3, K4}
	for j, k := range ks {
		m := GP64()
		MOVQ(mask, m)
		if j > 0 {
			SHRQ(U8(16*j), m)
		}
		KMOVW(m.As32(), k)
	}
	var rows [4]VecVirtual
	for j := range rows {
		rows[j] = ZMM()
		VMOVDQU32_Z(Mem{Base: in, Disp: 64 * j}, ks[j], rows[j])
	}
	x := make([]VecVirtual, 16)
	last := transposeChunks4(rows)
	copy(x[12:], last[:])
	for i := range 12 {
		x[i] = ZMM()
		if i < 4 {
			VPBROADCASTD(chachaSigma.Offset(4*i), x[i])
		} else {
			VPBROADCASTD(Mem{Base: key, Disp: 4 * (i - 4)}, x[i])
		}
	}
	laneDoubleRounds(x, "heads16doubleround")
	Comment("Words 0-3 plus the constants (section 2.3), back in input order.")
	for i := range 4 {
		VPADDD_BCST(chachaSigma.Offset(4*i), x[i], x[i])
	}
	for j, blk := range transposeChunks4([4]VecVirtual(x[:4])) {
		VMOVDQU32(blk, ks[j], Mem{Base: out, Disp: 64 * j})
	}
	for _, w := range x[4:] {
		VPXORD(w, w, w)
	}
	ADDQ(U32(256), in)
	ADDQ(U32(256), out)
	SUBQ(U32(16), n)
	JG(LabelRef("heads16pass"))
	VZEROUPPER()
	RET()
}

// transposeChunks4 transposes four registers' words 4x4 within each 128-bit chunk: word w of chunk c
// of result a is word a of chunk c of r[w].
func transposeChunks4(r [4]VecVirtual) [4]VecVirtual {
	var t [4]VecVirtual
	t[0], t[1] = unpackDwords(r[0], r[1], ZMMv)
	t[2], t[3] = unpackDwords(r[2], r[3], ZMMv)
	return unpackQwords(t, ZMMv)
}

// chachaKS8AVX512 writes the key stream of 8 consecutive blocks of one message on ymm lanes (AVX-512VL for
// VPROLD), for the last blocks of a short message where a full 16-lane pass would mostly be wasted.
// It writes the key stream, which the caller XORs in.
func chachaKS8AVX512() {
	Implement("chachaKS8AVX512")
	Attributes(NOSPLIT)
	Doc("chachaKS8AVX512 writes the 8 key-stream blocks from block counter st[12] on to out.")
	st := Mem{Base: Load(Param("st"), GP64())}
	out := Mem{Base: Load(Param("out"), GP64())}
	x := oneMessageBlocks(st, YMM, func(z VecVirtual) { VPBROADCASTD(st.Offset(4*12), z) }, "ks8doubleround")
	storeQuarters(x, out)
	VZEROUPPER()
	RET()
}

// chachaKS24AVX512 writes 24 key-stream blocks in one pass: a zmm state of 16 lanes and a ymm state of 8
// lanes go through the rounds interleaved. One pass of the rounds is a chain of dependent steps
// that leaves most of the core idle, so the second state comes almost for free; 24 blocks cover a
// 1420-byte message with its Poly1305 key block.
func chachaKS24AVX512(xor, mac bool) {
	name := "chachaKS24AVX512"
	switch {
	case mac:
		name = "chachaXOR24MACAVX512"
	case xor:
		name = "chachaXOR24AVX512"
	}
	Implement(name)
	Attributes(NOSPLIT)
	switch {
	case mac:
		Doc(name+" is chachaXOR24AVX512 that also absorbs blocks of mac's lanes (the ciphertexts of",
			"messages sealed before) beside its rounds, on the scalar pipes that the rounds leave idle.")
	case xor:
		Doc(name+" is chachaKS24AVX512 that XORs blocks 1-15 straight into the 960 bytes at src, to dst",
			"(in place or apart), and writes only block 0 and blocks 16-23 to out: what Seal of a",
			"message of 961 to 1472 bytes needs, without the buffer round trip of 15 blocks.")
	default:
		Doc(name + " writes the 24 key-stream blocks from block counter st[12] on to out.")
	}
	// hook absorbs a block of the chain at point k of a double round where macPoints24 says so
	// (never without mac).
	var chain laneChain
	if mac {
		chain = startLaneChain()
	}
	hook := func(k int) func(int) {
		if !mac {
			return nil
		}
		return func(step int) {
			if macPoints24[k+step] {
				labels++
				skip := fmt.Sprintf("%smac%d", name, labels)
				chain.step(skip, skip)
			}
		}
	}
	// With the chain the pointers are loaded where they are used, so that it has the registers
	// during the rounds.
	st := Mem{Base: Load(Param("st"), GP64())}
	var out, src, dst Mem
	loadPointers := func() {
		out = Mem{Base: Load(Param("out"), GP64())}
		if xor {
			src = Mem{Base: Load(Param("src"), GP64())}
			dst = Mem{Base: Load(Param("dst"), GP64())}
		}
	}
	if !mac {
		loadPointers()
	}
	spill := AllocLocal(16 * 32)
	x, y := make([]VecVirtual, 16), make([]VecVirtual, 16)
	for i := range 16 {
		x[i], y[i] = ZMM(), YMM()
		VPBROADCASTD(st.Offset(4*i), x[i])
		VPBROADCASTD(st.Offset(4*i), y[i])
	}
	VPADDD(iota16, x[12], x[12])              // lanes 0-15: blocks 0-15
	VPADDD(iota16.Offset(4*16), y[12], y[12]) // lanes 16-23: blocks 16-23
	r := GP32()
	MOVL(U32(10), r)
	Label(name + "doubleround")
	for round, cols := range [][4][4]int{
		{{0, 4, 8, 12}, {1, 5, 9, 13}, {2, 6, 10, 14}, {3, 7, 11, 15}},
		{{0, 5, 10, 15}, {1, 6, 11, 12}, {2, 7, 8, 13}, {3, 4, 9, 14}},
	} {
		quarterRoundsHook(x, cols, hook(8*round))
		quarterRoundsHook(y, cols, hook(8*round+4))
	}
	DECL(r)
	JNZ(LabelRef(name + "doubleround"))
	if mac {
		st = Mem{Base: Load(Param("st"), GP64())}
	}
	for i := range 16 {
		VPADDD_BCST(st.Offset(4*i), x[i], x[i])
		VPADDD_BCST(st.Offset(4*i), y[i], y[i])
	}
	VPADDD(iota16, x[12], x[12])
	VPADDD(iota16.Offset(4*16), y[12], y[12])
	if mac {
		chain.save()
		loadPointers()
	}
	Comment("The ymm state waits on the stack while the zmm one is transposed into blocks 0-15.")
	for i := range 16 {
		VMOVDQU32(y[i], spill.Offset(32*i))
	}
	for l, blk := range transpose16(x) {
		if !xor || l == 0 {
			VMOVDQU64(blk, out.Offset(64*l))
			continue
		}
		VPXORQ(src.Offset(64*(l-1)), blk, blk)
		VMOVDQU64(blk, dst.Offset(64*(l-1)))
	}
	for i := range 16 {
		y[i] = YMM()
		VMOVDQU32(spill.Offset(32*i), y[i])
	}
	wipeLocal(spill, 16*32, wipeEVEX) // here, where its stores overlap the transposition
	if xor {
		storeQuarters(y, out.Offset(64)) // blocks 16-23 after block 0
	} else {
		storeQuarters(y, out.Offset(64*16))
	}
	VZEROUPPER()
	RET()
}

// unpackDwords interleaves the dwords of state words a and b (b may be in memory): per 128-bit chunk,
// lo holds both words of its lanes 0 and 1, hi of its lanes 2 and 3. The first step of every
// transpose of the state words here.
func unpackDwords(a VecVirtual, b Op, vec func() VecVirtual) (lo, hi VecVirtual) {
	lo, hi = vec(), vec()
	VPUNPCKLDQ(b, a, lo)
	VPUNPCKHDQ(b, a, hi)
	return lo, hi
}

// unpackQwords is the second step for four state words 4k..4k+3, from the unpackDwords of words 4k,
// 4k+1 (t[0], t[1]) and 4k+2, 4k+3 (t[2], t[3]): per 128-bit chunk, q[a] holds the four words of
// its lane a.
func unpackQwords(t [4]VecVirtual, vec func() VecVirtual) (q [4]VecVirtual) {
	for a := range q {
		q[a] = vec()
	}
	VPUNPCKLQDQ(t[2], t[0], q[0])
	VPUNPCKHQDQ(t[2], t[0], q[1])
	VPUNPCKLQDQ(t[3], t[1], q[2])
	VPUNPCKHQDQ(t[3], t[1], q[3])
	return q
}

// storeQuarters transposes the state words x (ymm: 4 lanes per 128-bit chunk) into the lanes'
// 64-byte blocks at out.
func storeQuarters(x []VecVirtual, out Mem) {
	Comment("Per 128-bit chunk j, the unpacks leave words 4k..4k+3 of lane 4j+a in q[4k+a]: store",
		"them as bytes 16k..16k+15 of that lane's block.")
	for k := 0; k < 16; k += 4 {
		var t [4]VecVirtual
		t[0], t[1] = unpackDwords(x[k], x[k+1], YMMv)
		t[2], t[3] = unpackDwords(x[k+2], x[k+3], YMMv)
		q := unpackQwords(t, YMMv)
		for a := range 4 {
			VMOVDQU32(q[a].AsX(), out.Offset(64*a+4*k))
			VEXTRACTI32X4(U8(1), q[a], out.Offset(64*(4+a)+4*k))
		}
	}
}
