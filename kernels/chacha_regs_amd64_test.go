// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

//go:build gc && !purego

package kernels

import (
	"bytes"
	"math/rand/v2"
	"testing"
	"unsafe"
)

// Tests of the AVX2 kernels for 1-cycle cores (_asm/chacha/chacha_avx2_regs.go) against the spilled
// kernels of the same contract and the portable Poly1305, whichever kernels this CPU selects.

// TestChaChaOneAVX2Regs: the single-message passes give the spilled passes' key stream.
func TestChaChaOneAVX2Regs(t *testing.T) {
	if !chachaHas(AVX2) {
		t.Skip("needs AVX2")
	}
	rng := rand.New(rand.NewPCG(7, 8))
	// The kernels are called directly: a func value of a NOSPLIT kernel adds a wrapper frame over
	// the limit.
	type kernel struct{ blocks int }
	ref := func(k kernel, st *[16]uint32, dst, src *byte, n int) {
		if k.blocks == 8 {
			chachaXOR8OneAVX2(st, dst, src, n)
		} else {
			chachaXOR16OneAVX2(st, dst, src, n)
		}
	}
	regs := func(k kernel, st *[16]uint32, dst, src *byte, n int) {
		if k.blocks == 8 {
			chachaXOR8OneAVX2Regs(st, dst, src, n)
		} else {
			chachaXOR16OneAVX2Regs(st, dst, src, n)
		}
	}
	for _, k := range []kernel{{8}, {16}} {
		for passes := 1; passes <= 3; passes++ {
			var st [16]uint32
			for i := range st {
				st[i] = rng.Uint32()
			}
			st[12] = ^uint32(0) - uint32(rng.IntN(3*k.blocks)) // the counter wraps within some calls
			n := passes * k.blocks * 64
			src := make([]byte, n)
			for i := range src {
				src[i] = byte(rng.Uint32())
			}
			want, got := make([]byte, n), make([]byte, n)
			ref(k, &st, &want[0], &src[0], n)
			regs(k, &st, &got[0], &src[0], n)
			if !bytes.Equal(got, want) {
				t.Fatalf("%d-block kernel, %d passes: differs from the spilled kernel", k.blocks, passes)
			}
			copy(got, src)
			regs(k, &st, &got[0], &got[0], n) // in place
			if !bytes.Equal(got, want) {
				t.Fatalf("%d-block kernel, %d passes, in place: differs from the spilled kernel", k.blocks, passes)
			}
		}
	}
}

// TestChaChaLanesAVX2Regs: the 8-lane kernel gives lanes 0-7 of the 16-lane one (which
// TestChaChaAVX2Kernels checks against the Generic tier), and leaves lanes 8-15 alone.
func TestChaChaLanesAVX2Regs(t *testing.T) {
	if !chachaHas(AVX2) {
		t.Skip("needs AVX2")
	}
	const blocks = 5
	// stream runs kernel over lanes in place, from fixed random rows, and returns the buffer.
	stream := func(kernel func(*streamTable, *chachaPtrs16, int, int)) []byte {
		buf := make([]byte, 16*lanePitch)
		for i := range buf {
			buf[i] = byte(i)
		}
		s := newStreamLanes()
		tab := s.start(chachaLaneKernels(AVX2))
		r := rand.New(rand.NewPCG(1, 1))
		for w := range 16 {
			for l := range 16 {
				tab.rows[w][l] = r.Uint32()
			}
		}
		for l := range 16 {
			tab.rows[16][l] = 1
			s.ptrs.src[l] = unsafe.Pointer(&buf[l*lanePitch])
			s.ptrs.dst[l] = s.ptrs.src[l]
		}
		kernel(tab, &s.ptrs, blocks, 64)
		return buf
	}
	laneBytes := func(buf []byte, l int) []byte { return buf[l*lanePitch : l*lanePitch+blocks*64] }
	want := stream(chachaXOR16AVX2Regs)
	got8 := stream(chachaXOR8AVX2Regs)
	for l := range 16 {
		if l < 8 && !bytes.Equal(laneBytes(got8, l), laneBytes(want, l)) {
			t.Fatalf("chachaXOR8AVX2Regs lane %d differs from chachaXOR16AVX2Regs", l)
		}
		if l >= 8 && !bytes.Equal(laneBytes(got8, l), laneBytes(stream(func(*streamTable, *chachaPtrs16, int, int) {}), l)) {
			t.Fatalf("chachaXOR8AVX2Regs wrote lane %d", l)
		}
	}
}

// TestPoly1305AVX2Lanes8: the 8-lane radix-2^26 kernel leaves lanes 0-7 as the 16-lane one does and
// lanes 8-15 untouched.
func TestPoly1305AVX2Lanes8(t *testing.T) {
	if !chachaHas(AVX2) {
		t.Skip("needs AVX2")
	}
	buf := make([]byte, 16*lanePitch)
	rng := rand.New(rand.NewPCG(13, 14))
	for i := range buf {
		buf[i] = byte(rng.Uint32())
	}
	run := func(lanes8 bool) *polyLanes {
		p := newPolyLanes()
		tab := p.tab()
		r := rand.New(rand.NewPCG(2, 2))
		for row := range 14 {
			for l := range 16 {
				tab.st[row][l] = r.Uint64() & (1<<26 - 1)
			}
		}
		for l := range 16 {
			p.ptrs.base[l] = unsafe.Pointer(&buf[l*lanePitch])
		}
		if lanes8 {
			poly1305AVX2Lanes8(&tab.st, &p.ptrs, 7, 16)
		} else {
			poly1305AVX2(&tab.st, &p.ptrs, 7, 16)
		}
		return p
	}
	want, got := run(false).tab().st, run(true).tab().st
	for row := range 5 {
		for l := range 16 {
			if l < 8 && got[row][l] != want[row][l] {
				t.Fatalf("lane %d: accumulator limb %d differs from poly1305AVX2's", l, row)
			}
		}
	}
	r := rand.New(rand.NewPCG(2, 2))
	for row := range 14 {
		for l := range 16 {
			v := r.Uint64() & (1<<26 - 1)
			if row < 5 && l >= 8 && got[row][l] != v {
				t.Fatalf("poly1305AVX2Lanes8 changed lane %d", l)
			}
		}
	}
}

// TestChaChaOneOpRegs runs the single-message path for 1-cycle cores on every message length up to
// past chachaRegsOpenMax (both first-pass sizes, every partial last pass, MAC inputs the passes
// absorb partly or wholly), with and without AD, in place and not, against the portable path; a
// tampered Open fails with its Dst zeroed.
func TestChaChaOneOpRegs(t *testing.T) {
	if !chachaHas(AVX2) {
		t.Skip("needs AVX2")
	}
	rng := rand.New(rand.NewPCG(9, 10))
	for _, s := range []Suite{ChaCha20Poly1305, XChaCha20Poly1305} {
		raw := make([]byte, 32)
		for i := range raw {
			raw[i] = byte(rng.Uint32())
		}
		key, err := NewKey(s, raw)
		if err != nil {
			t.Fatal(err)
		}
		nonce := make([]byte, s.NonceSize())
		for n := 0; n <= chachaRegsOpenMax+80; n += 1 + rng.IntN(3) {
			for _, adLen := range []int{0, 13} {
				ad, pt := make([]byte, adLen), make([]byte, n)
				for i := range pt {
					pt[i] = byte(rng.Uint32())
				}
				for i := range nonce {
					nonce[i] = byte(rng.Uint32())
				}
				want := make([]byte, n+TagSize)
				ref := Op{Key: key, Nonce: nonce, AD: ad, Src: pt, Dst: want}
				chachaOpGeneric(&ref, false)
				inPlace := n%2 == 0
				got := make([]byte, n+TagSize)
				src := pt
				if inPlace {
					copy(got, pt)
					src = got[:n]
				}
				op := Op{Key: key, Nonce: nonce, AD: ad, Src: src, Dst: got}
				chachaOneOpRegs(&op, false, n)
				if !bytes.Equal(got, want) {
					t.Fatalf("%v Seal, %d bytes, AD %d: differs at byte %d", s, n, adLen, firstDiffInternal(got, want))
				}
				plain := make([]byte, n)
				ct := want
				if inPlace {
					ct = append([]byte(nil), want...)
					plain = ct[:n]
				}
				op = Op{Key: key, Nonce: nonce, AD: ad, Src: ct, Dst: plain}
				if !chachaOneOpRegs(&op, true, n) || op.Err != nil || !bytes.Equal(plain, pt) {
					t.Fatalf("%v Open, %d bytes, AD %d: wrong plaintext or failed", s, n, adLen)
				}
				bad := append([]byte(nil), want...)
				bad[rng.IntN(len(bad))] ^= 1 << rng.IntN(8)
				plain = make([]byte, n)
				for i := range plain {
					plain[i] = 0xaa
				}
				op = Op{Key: key, Nonce: nonce, AD: ad, Src: bad, Dst: plain}
				if chachaOneOpRegs(&op, true, n) || op.Err != ErrAuth || !bytes.Equal(plain, make([]byte, n)) {
					t.Fatalf("%v Open of a tampered message, %d bytes: not refused with Dst zeroed", s, n)
				}
			}
		}
	}
}

func firstDiffInternal(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// TestChaChaSealPipeline seals batches of 1 to 12 ops through the single-message pipeline for
// 1-cycle cores, every length up to past two full-size packets' among them (both first-pass sizes,
// partial last passes, ciphertext its passes absorb partly or wholly), with and without AD, in place
// and not, with ops it does not take in between, against the portable path; and allocates nothing.
func TestChaChaSealPipeline(t *testing.T) {
	if !chachaHas(AVX2) {
		t.Skip("needs AVX2")
	}
	rng := rand.New(rand.NewPCG(11, 12))
	keys := laneTestKeys(t, rng)
	p := pipeSeals{minOps: 1, lengths: lengths{1, 3000}, maxAD: 40}
	for range 300 {
		count := 1 + rng.IntN(12)
		got, want := make([]Op, count), make([]Op, count)
		for i := range got {
			n := rng.IntN(3100) // some past p's lengths, and some empty: not taken
			ad, pt := make([]byte, []int{0, 13, 41}[rng.IntN(3)]), make([]byte, n)
			for j := range pt {
				pt[j] = byte(rng.Uint32())
			}
			k := keys[rng.IntN(len(keys))]
			nonce := make([]byte, k.suite.NonceSize())
			for j := range nonce {
				nonce[j] = byte(rng.Uint32())
			}
			want[i] = Op{Key: k, Nonce: nonce, AD: ad, Src: pt, Dst: make([]byte, n+TagSize)}
			chachaOpGeneric(&want[i], false)
			got[i] = Op{Key: k, Nonce: nonce, AD: ad, Src: pt, Dst: make([]byte, n+TagSize)}
			if rng.IntN(2) == 0 { // in place
				copy(got[i].Dst, pt)
				got[i].Src = got[i].Dst[:n]
			}
		}
		chachaSealPipeline(got, &p)
		for i := range got {
			taken := p.takes(&got[i])
			if taken && !bytes.Equal(got[i].Dst, want[i].Dst) {
				t.Fatalf("op %d of %d (%v, %d bytes, AD %d): differs at byte %d", i, count, got[i].Key.suite,
					len(got[i].Src), len(got[i].AD), firstDiffInternal(got[i].Dst, want[i].Dst))
			}
			if !taken && !bytes.Equal(got[i].Dst[len(got[i].Src):], make([]byte, TagSize)) {
				t.Fatalf("op %d of %d (%d bytes, AD %d): not taken, but a tag was written", i, count,
					len(got[i].Src), len(got[i].AD))
			}
		}
	}
	ops := make([]Op, 8)
	for i := range ops {
		ops[i] = Op{Key: keys[0], Nonce: make([]byte, 12), Src: make([]byte, 1420), Dst: make([]byte, 1420+TagSize)}
	}
	if a := testing.AllocsPerRun(10, func() { chachaSealPipeline(ops, &p) }); a != 0 {
		t.Errorf("8 x 1420 B: %v allocations a batch", a)
	}
}
