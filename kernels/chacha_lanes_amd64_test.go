// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

//go:build gc && !purego

package kernels

// Each assembly lane kernel against the portable one of its contract (chacha_lanes_generic.go) on
// random tables: the same outputs, block counters and accumulators, word for word.

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"testing"
	"unsafe"
)

func TestStreamKernelsPortable(t *testing.T) {
	kernels := []struct {
		name   string
		has    bool
		masked bool // random byte masks for the last block
		last   bool // for some lanes, last addresses of their own (laneKernels.lastApart)
		upper  bool // the portable kernel's lanes: all 16, or 0-7
		run    func(*streamTable, *chachaPtrs16, int, int)
	}{
		{"chachaXOR16AVX512", chachaHas(AVX512), true, true, true, chachaXOR16AVX512},
		{"chachaXOR16AVX2", chachaHas(AVX2), false, false, true, chachaXOR16AVX2},
		{"chachaXOR16AVX2Regs", chachaHas(AVX2), false, true, true, chachaXOR16AVX2Regs},
		{"chachaXOR8AVX2Regs", chachaHas(AVX2), false, true, false, chachaXOR8AVX2Regs},
	}
	for _, k := range kernels {
		t.Run(k.name, func(t *testing.T) {
			if !k.has {
				t.Skip("not on this CPU")
			}
			rng := rand.New(rand.NewPCG(21, 22))
			for range 200 {
				n, stride := 1+rng.IntN(20), 64*(1+rng.IntN(2))
				// One random setup, run twice: by the assembly and by the portable kernel.
				seed := rng.Uint64()
				run := func(portable bool) (*streamLanes, [16][]byte, [16][]byte) {
					r := rand.New(rand.NewPCG(seed, 0))
					s := newStreamLanes()
					tab := s.start(laneKernels{masked: k.masked})
					var bufs, lastBufs [16][]byte
					for w := range 17 {
						for l := range 16 {
							tab.rows[w][l] = r.Uint32()
						}
					}
					for l := range 16 {
						tab.rows[16][l] %= 20
						if k.masked {
							tab.mask[l] = r.Uint64()
						}
						if k.last && r.IntN(3) == 0 { // the last block elsewhere (setLast: block 1 of a Seal)
							src := randomBytes(r, 64)
							dst := src
							if r.IntN(2) == 0 {
								dst = randomBytes(r, 64)
							}
							s.ptrs.lastSrc[l], s.ptrs.lastDst[l] = unsafe.Pointer(&src[0]), unsafe.Pointer(&dst[0])
							s.ptrs.hasLast = 1
							lastBufs[l] = dst
						}
						if n == 1 && r.IntN(3) == 0 { // the lane's scratch block (a nil buffer)
							s.onScratch(l)
							for i := range tab.scratch[l] {
								tab.scratch[l][i] = byte(r.Uint32())
							}
							continue
						}
						src := randomBytes(r, n*stride)
						dst := src
						if r.IntN(2) == 0 {
							dst = randomBytes(r, n*stride)
						}
						s.ptrs.src[l], s.ptrs.dst[l] = unsafe.Pointer(&src[0]), unsafe.Pointer(&dst[0])
						bufs[l] = dst
					}
					if portable {
						chachaLanesGeneric(tab, &s.ptrs, n, stride, k.upper)
					} else {
						k.run(tab, &s.ptrs, n, stride)
					}
					return s, bufs, lastBufs
				}
				want, wantBufs, wantLast := run(true)
				got, gotBufs, gotLast := run(false)
				lanes := 16
				if !k.upper {
					lanes = 8
				}
				wt, gt := want.tab(), got.tab()
				for l := range lanes {
					if !bytes.Equal(gotBufs[l], wantBufs[l]) || !bytes.Equal(gotLast[l], wantLast[l]) ||
						gt.scratch[l] != wt.scratch[l] {
						t.Fatalf("n %d stride %d lane %d: output differs", n, stride, l)
					}
					for w := range 17 {
						if gt.rows[w][l] != wt.rows[w][l] {
							t.Fatalf("n %d stride %d lane %d: row %d is %#x, want %#x", n, stride, l, w, gt.rows[w][l], wt.rows[w][l])
						}
					}
				}
			}
		})
	}
}

// TestChaChaLanesSIMD runs the lane driver on each SIMD kernel set this CPU has against the Generic
// tier, on the batches of TestChaChaLanesPortable: the driver's paths (segments, short and long
// groups, the latter with and without the stitched MAC where the CPU has it) with the assembly's
// tables.
func TestChaChaLanesSIMD(t *testing.T) {
	defer func(s bool) { impl.chachaStitchedMAC = s }(impl.chachaStitchedMAC)
	for _, v := range []struct {
		tier     Tier
		stitched bool
	}{{AVX2, false}, {AVX2, true}, {AVX512, false}} {
		t.Run(fmt.Sprintf("%v/stitched=%v", v.tier, v.stitched), func(t *testing.T) {
			if !chachaHas(v.tier) || v.stitched && !impl.chachaAVX2Regs {
				t.Skip("not on this CPU")
			}
			impl.chachaStitchedMAC = v.stitched
			k := chachaLaneKernels(v.tier)
			rng := rand.New(rand.NewPCG(9, 10))
			keys := laneTestKeys(t, rng)
			for round := range 3 * shapeCount {
				for _, size := range []int{8, 16, 17, 33, 64, 65, 100} {
					checkLanesPortable(t, k, keys, size, round%shapeCount, rng)
				}
			}
			for _, size := range []int{17, 24} {
				checkLanesPortable(t, k, keys, size, shapeHuge, rng)
			}
		})
	}
}

func TestPolyKernelsPortable(t *testing.T) {
	kernels := []struct {
		name           string
		has            bool
		radix44, upper bool
		byValue        bool // the accumulators equal mod 2^130-5, not limb for limb
		run            func(*[15][16]uint64, *polyPtrs16, int, int)
	}{
		{"poly1305AVX2", chachaHas(AVX2), false, true, false, poly1305AVX2},
		{"poly1305AVX2Lanes8", chachaHas(AVX2), false, false, false, poly1305AVX2Lanes8},
		{"poly1305AVX2Regs", chachaHas(AVX2), false, true, true, poly1305AVX2Regs},
		{"poly1305AVX2RegsLanes8", chachaHas(AVX2), false, false, true, poly1305AVX2RegsLanes8},
		{"poly1305IFMAZ", chachaHas(AVX512) && impl.polyIFMA, true, true, true, poly1305IFMAZ},
		{"poly1305IFMAY", chachaHas(AVX512) && impl.polyIFMA, true, true, true, poly1305IFMAY},
		{"poly1305IFMAYLanes8", chachaHas(AVX512) && impl.polyIFMA, true, false, true, poly1305IFMAYLanes8},
	}
	for _, k := range kernels {
		t.Run(k.name, func(t *testing.T) {
			if !k.has {
				t.Skip("not on this CPU")
			}
			rng := rand.New(rand.NewPCG(23, 24))
			for range 200 {
				n, stride := 1+rng.IntN(40), 16*(1+rng.IntN(2))
				if rng.IntN(8) == 0 { // long calls: the accumulators' bounds must hold throughout
					n = 1 + rng.IntN(maxPolyBlocks)
				}
				want, got := randomPolyLanes(rng, k.radix44, n, stride), newPolyLanes()
				*got.tab(), got.ptrs = *want.tab(), want.ptrs // the tables sit at different offsets of buf
				poly1305ForPortable(k.radix44, want, n, stride, k.upper)
				before := got.tab().st
				k.run(&got.tab().st, &got.ptrs, n, stride)
				if k.byValue {
					comparePolyValues(t, got, want, &before, k.radix44, k.upper)
				} else {
					comparePolyRows(t, got, want, k.radix44, k.upper)
				}
			}
		})
	}
}

func TestPolyFinishKernelPortable(t *testing.T) {
	if !chachaHas(AVX512) || !impl.polyIFMA {
		t.Skip("needs AVX-512 with IFMA")
	}
	rng := rand.New(rand.NewPCG(25, 26))
	for round := range 200 {
		want := randomPolyLanes(rng, true, 1, 16)
		wt := want.tab()
		for l := range 16 {
			for _, row := range []int{polyRowKeyS, polyRowKeyS + 1, polyRowWant, polyRowWant + 1} {
				wt.st[row][l] = rng.Uint64()
			}
			binary.LittleEndian.PutUint64(wt.scratch[l][32:], rng.Uint64N(1<<20))
			binary.LittleEndian.PutUint64(wt.scratch[l][40:], rng.Uint64N(1<<20))
		}
		if round%2 == 0 { // half the lanes expect their true tags
			tmp := newPolyLanes()
			*tmp.tab() = *wt
			poly1305FinishLanes44Generic(&tmp.tab().st)
			for l := 0; l < 16; l += 2 {
				wt.st[polyRowWant][l], wt.st[polyRowWant+1][l] = tmp.tab().st[polyRowTag][l], tmp.tab().st[polyRowTag+1][l]
			}
		}
		got := newPolyLanes()
		*got.tab() = *wt
		eqWant := poly1305FinishLanes44Generic(&wt.st)
		eqGot := poly1305FinishIFMAZ(&got.tab().st)
		if eqGot != eqWant {
			t.Fatalf("verdicts %#x, want %#x", eqGot, eqWant)
		}
		for _, row := range []int{0, 1, 2, polyRowTag, polyRowTag + 1} {
			if got.tab().st[row] != wt.st[row] {
				t.Fatalf("row %d differs", row)
			}
		}
	}
}

// randomPolyLanes returns lanes with random one-time keys, accumulators at random values within the
// kernels' limb bounds, and n blocks of stride bytes per lane, a few lanes on their scratch block.
func randomPolyLanes(rng *rand.Rand, radix44 bool, n, stride int) *polyLanes {
	p := newPolyLanes()
	p.radix26 = !radix44
	st := &p.tab().st
	for l := range 16 {
		var key [32]byte
		copy(key[:], randomBytes(rng, 32))
		p.start(l, &key)
		if radix44 {
			st[0][l], st[1][l], st[2][l] = rng.Uint64N(mask44+1<<17), rng.Uint64N(mask44+1), rng.Uint64N(1<<42)
		} else {
			for i := range 5 {
				st[i][l] = rng.Uint64N(limb26 + 1)
			}
			st[1][l] += rng.Uint64N(1 << 11)
		}
		if n*stride <= 48 && rng.IntN(3) == 0 {
			copy(p.tab().scratch[l][:], randomBytes(rng, 48))
			p.onScratch(l, 0)
			continue
		}
		msg := randomBytes(rng, n*stride)
		p.ptrs.base[l] = unsafe.Pointer(&msg[0])
	}
	return p
}

// poly1305ForPortable runs the portable kernel of the format on p's lanes.
func poly1305ForPortable(radix44 bool, p *polyLanes, n, stride int, upper bool) {
	if radix44 {
		poly1305Lanes44Generic(&p.tab().st, &p.ptrs, n, stride)
		return
	}
	poly1305Lanes26Generic(&p.tab().st, &p.ptrs, n, stride, upper)
}

// comparePolyValues fails unless got's accumulators equal want's mod 2^130-5 and keep the kernels'
// bounds between calls (radix 2^26: limbs below 2^26, limb 1 below 2^26 + 2^11; radix 2^44: limbs
// below 2^44, 2^44 and 2^42, limb 0 below 2^44 + 2^17), in the lanes the kernels ran, and got's other
// rows and lanes are as they were (before).
func comparePolyValues(t *testing.T, got, want *polyLanes, before *[15][16]uint64, radix44, upper bool) {
	t.Helper()
	g, w := &got.tab().st, &want.tab().st
	limbs, rows := 5, 14 // h, then r and 5r
	bounds := []uint64{limb26, limb26 + 1<<11, limb26, limb26, limb26}
	if radix44 {
		limbs, rows = 3, 8 // h, then r and 20r
		bounds = []uint64{mask44 + 1<<17, mask44, 1<<42 - 1}
	}
	for l := range 16 {
		if !upper && l >= 8 {
			for row := range rows {
				if g[row][l] != before[row][l] {
					t.Fatalf("row %d lane %d changed", row, l)
				}
			}
			continue
		}
		for row := limbs; row < rows; row++ {
			if g[row][l] != before[row][l] {
				t.Fatalf("multiplier row %d lane %d changed", row, l)
			}
		}
		for row := range limbs {
			if g[row][l] > bounds[row] {
				t.Fatalf("lane %d limb %d: %#x above its bound", l, row, g[row][l])
			}
		}
		var a, b [TagSize]byte // h mod 2^130-5, mod 2^128
		if radix44 {
			poly1305Finish44(&a, g[0][l], g[1][l], g[2][l], 0, 0)
			poly1305Finish44(&b, w[0][l], w[1][l], w[2][l], 0, 0)
		} else {
			poly1305Finish26(&a, g[0][l], g[1][l], g[2][l], g[3][l], g[4][l], 0, 0)
			poly1305Finish26(&b, w[0][l], w[1][l], w[2][l], w[3][l], w[4][l], 0, 0)
		}
		if a != b {
			t.Fatalf("lane %d: accumulator %x, want %x", l, a, b)
		}
	}
}

// comparePolyRows fails unless got's accumulator and multiplier rows equal want's in the lanes the
// kernels ran.
func comparePolyRows(t *testing.T, got, want *polyLanes, radix44, upper bool) {
	t.Helper()
	rows := 14 // h, r and 5r in radix 2^26
	if radix44 {
		rows = 8 // h, r, 20r
	}
	lanes := 16
	if !upper {
		lanes = 8
	}
	g, w := &got.tab().st, &want.tab().st
	for row := range rows {
		for l := range lanes {
			if g[row][l] != w[row][l] {
				t.Fatalf("row %d lane %d: %#x, want %#x", row, l, g[row][l], w[row][l])
			}
		}
	}
}

// TestSealLong24: chachaSealLong24 (chachaOneOp's long Seals where impl.chachaSealLongChain) seals
// as Generic does, at the lengths where its passes end (whole passes of 24 blocks, the last pass
// that carries the chain with 16-23 blocks, a last pass of 9-15 blocks or of up to 8) and at
// random ones, with AD of 0-64 bytes, in place and apart.
func TestSealLong24(t *testing.T) {
	if !chachaHas(AVX512) || !impl.polyIFMA {
		t.Skip("needs AVX512 and IFMA")
	}
	defer func(v bool) { impl.chachaSealLongChain = v }(impl.chachaSealLongChain)
	impl.chachaSealLongChain = true
	rng := rand.New(rand.NewPCG(25, 26))
	raw := randomBytes(rng, 32)
	lens := []int{chachaSealLongMin, chachaSealLongMin + 1, 71*64 - 1, 71 * 64, 71*64 + 1, 87*64 - 1, 87 * 64,
		87*64 + 512, 87*64 + 513, 95 * 64, 16 << 10, 64 << 10}
	for range 20 {
		lens = append(lens, chachaSealLongMin+rng.IntN(20<<10))
	}
	for _, s := range []Suite{ChaCha20Poly1305, XChaCha20Poly1305} {
		key, _ := NewKey(s, raw)
		for i, n := range lens {
			src := randomBytes(rng, n)
			ad := randomBytes(rng, rng.IntN(sealChainMaxAD+1))
			nonce := randomBytes(rng, s.NonceSize())
			want := []Op{{Key: key, Nonce: nonce, AD: ad, Src: src, Dst: make([]byte, n+TagSize)}}
			Generic.Seal(want)
			got := Op{Key: key, Nonce: nonce, AD: ad, Src: src, Dst: make([]byte, n+TagSize)}
			if i%2 == 1 { // in place
				copy(got.Dst, src)
				got.Src = got.Dst[:n]
			}
			chachaOneOp(&got, false, AVX512)
			if !bytes.Equal(got.Dst, want[0].Dst) {
				t.Fatalf("%v, %d bytes, %d bytes of AD: differs from Generic", s, n, len(ad))
			}
		}
	}
}

// TestXOR24MACKernel runs chachaXOR24MACAVX512 against chachaXOR24AVX512 and the portable Poly1305:
// random states, messages, 1 to 16 MAC lanes of 1 to 100 blocks and 1 to 6 calls, so that the
// chain starts, pauses and resumes in every position and sometimes runs out of blocks; whatever
// blocks it absorbed (m.lane, m.done) must be the lanes' first ones, in order.
func TestXOR24MACKernel(t *testing.T) {
	if !chachaHas(AVX512) {
		t.Skip("needs AVX512")
	}
	rng := rand.New(rand.NewPCG(23, 24))
	for range 60 {
		lanes, blocks, calls := 1+rng.IntN(16), 1+rng.IntN(100), 1+rng.IntN(6)
		macBuf := randomBytes(rng, 16*lanePitch)
		var m laneMAC
		m.lanes, m.size = lanes, uintptr(16*blocks)
		for l := range lanes {
			m.mac[l].r0 = rng.Uint64() & 0x0ffffffc0fffffff
			m.mac[l].r1 = rng.Uint64() & 0x0ffffffc0ffffffc
			m.mac[l].h = [3]uint64{rng.Uint64(), rng.Uint64(), uint64(rng.IntN(4))}
			m.msg[l] = unsafe.Pointer(&macBuf[l*lanePitch])
		}
		start := m.mac
		for range calls {
			var st [16]uint32
			for i := range st {
				st[i] = rng.Uint32()
			}
			src := randomBytes(rng, 15*64)
			var gotOut, wantOut [9 * 64]byte
			got, want := make([]byte, 15*64), make([]byte, 15*64)
			stWant := st
			chachaXOR24MACAVX512(&st, &gotOut, &got[0], &src[0], &m)
			chachaXOR24AVX512(&stWant, &wantOut, &want[0], &src[0])
			if !bytes.Equal(got, want) || gotOut != wantOut || st != stWant {
				t.Fatalf("%d lanes of %d blocks: key stream differs from chachaXOR24AVX512", lanes, blocks)
			}
		}
		for l := range lanes {
			absorbed := 0
			switch {
			case l < m.lane:
				absorbed = 16 * blocks
			case l == m.lane:
				absorbed = int(m.done)
			}
			ref := start[l]
			ref.blocks(macBuf[l*lanePitch:][:absorbed])
			if m.mac[l].h != ref.h {
				t.Fatalf("%d lanes of %d blocks, %d calls: lane %d accumulator %x, want %x after %d bytes",
					lanes, blocks, calls, l, m.mac[l].h, ref.h, absorbed)
			}
		}
		if absorbed := m.lane*16*blocks + int(m.done); absorbed < min(calls*16*40, lanes*16*blocks) {
			t.Fatalf("%d lanes of %d blocks, %d calls: the chain absorbed only %d bytes", lanes, blocks, calls, absorbed)
		}
	}
}

// TestStreamMACKernels runs chachaXOR16MACAVX2Regs, chachaXOR8MACAVX2Regs and
// chachaXOR16MACAVX512 against their plain stream kernels and the portable Poly1305: random lanes'
// messages and states (and byte masks of the last block, and last blocks at addresses of their
// own), 1 to 16 MAC lanes of 1 to 200 blocks, spread over stream calls of several sizes and a last
// call with n = 0, so that chains start, pause and resume in every position.
func TestStreamMACKernels(t *testing.T) {
	if !chachaHas(AVX2) {
		t.Skip("needs AVX2")
	}
	rng := rand.New(rand.NewPCG(21, 22))
	for _, k := range []struct {
		name   string
		has    bool
		masked bool
		mac    func(*streamTable, *chachaPtrs16, int, int, *laneMAC)
		plain  func(*streamTable, *chachaPtrs16, int, int)
	}{
		{"chachaXOR16MACAVX2Regs", true, false, chachaXOR16MACAVX2Regs, chachaXOR16AVX2Regs},
		{"chachaXOR8MACAVX2Regs", true, false, chachaXOR8MACAVX2Regs, chachaXOR8AVX2Regs},
		{"chachaXOR16MACAVX512", chachaHas(AVX512), true, chachaXOR16MACAVX512, chachaXOR16AVX512},
	} {
		if !k.has {
			continue
		}
		for round := range 40 {
			lanes, blocks := 1+rng.IntN(16), 1+rng.IntN(200)
			if round%4 == 0 {
				lanes = 16
			}
			calls := []int{1 + rng.IntN(3), 1 + rng.IntN(40)}
			macBuf, got := randomBytes(rng, 16*lanePitch), randomBytes(rng, 16*lanePitch)
			want := bytes.Clone(got)
			lastGot := randomBytes(rng, 16*64) // the lanes' last blocks where set apart
			lastWant := bytes.Clone(lastGot)
			var m laneMAC
			m.lanes, m.size = lanes, uintptr(16*blocks)
			var ref [16]poly1305
			for l := range lanes {
				m.mac[l].r0 = rng.Uint64() & 0x0ffffffc0fffffff
				m.mac[l].r1 = rng.Uint64() & 0x0ffffffc0ffffffc
				m.mac[l].h = [3]uint64{rng.Uint64(), rng.Uint64(), uint64(rng.IntN(4))}
				m.msg[l] = unsafe.Pointer(&macBuf[l*lanePitch])
				ref[l] = m.mac[l]
				ref[l].blocks(macBuf[l*lanePitch:][:16*blocks])
			}
			sGot, sWant := newStreamLanes(), newStreamLanes()
			tGot, tWant := sGot.tab(), sWant.tab()
			for w := range 17 {
				for l := range 16 {
					tGot.rows[w][l] = rng.Uint32()
				}
			}
			for l := range 16 {
				tGot.rows[16][l] = 1
				if k.masked {
					tGot.mask[l] = rng.Uint64()
				}
			}
			tWant.rows, tWant.mask = tGot.rows, tGot.mask
			off := 0
			for _, n := range calls {
				for l := range 16 {
					sGot.ptrs.src[l] = unsafe.Pointer(&got[l*lanePitch])
					sGot.ptrs.dst[l], sGot.ptrs.off[l] = sGot.ptrs.src[l], uintptr(off)
					sWant.ptrs.src[l] = unsafe.Pointer(&want[l*lanePitch])
					sWant.ptrs.dst[l], sWant.ptrs.off[l] = sWant.ptrs.src[l], uintptr(off)
					var gl, wl unsafe.Pointer
					if rng.IntN(3) == 0 {
						gl, wl = unsafe.Pointer(&lastGot[64*l]), unsafe.Pointer(&lastWant[64*l])
						sGot.ptrs.hasLast, sWant.ptrs.hasLast = 1, 1
					}
					sGot.ptrs.lastSrc[l], sGot.ptrs.lastDst[l] = gl, gl
					sWant.ptrs.lastSrc[l], sWant.ptrs.lastDst[l] = wl, wl
				}
				k.mac(tGot, &sGot.ptrs, n, 64, &m)
				k.plain(tWant, &sWant.ptrs, n, 64)
				off += 64 * n
			}
			k.mac(nil, nil, 0, 0, &m)
			if !bytes.Equal(got, want) || !bytes.Equal(lastGot, lastWant) || tGot.rows != tWant.rows {
				t.Fatalf("%s, calls %v: key stream or counters differ from the plain kernel", k.name, calls)
			}
			for l := range lanes {
				if m.mac[l].h != ref[l].h || m.mac[l].r0 != ref[l].r0 || m.mac[l].r1 != ref[l].r1 {
					t.Fatalf("%s, %d lanes of %d blocks, calls %v: lane %d accumulator %x, want %x",
						k.name, lanes, blocks, calls, l, m.mac[l].h, ref[l].h)
				}
			}
		}
	}
}
