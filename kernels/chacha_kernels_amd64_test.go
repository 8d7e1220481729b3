// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

//go:build gc && !purego

package kernels

// Tests and benchmarks of the ChaCha-family kernel variants that the CPU's features alone would not
// select: the ymm IFMA Poly1305 kernel and the radix-2^26 kernel on the AVX512 tier (an AVX-512 CPU
// without IFMA). They are checked against the Generic tier on batches of mixed lengths.

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/big"
	"math/rand/v2"
	"testing"
	"unsafe"

	xpoly1305 "golang.org/x/crypto/poly1305"
)

func TestChaChaKernelVariants(t *testing.T) {
	if !chachaHas(AVX512) || !impl.polyIFMA {
		t.Skip("needs AVX-512 with IFMA")
	}
	variants := []struct {
		name      string
		zmm, ifma bool
	}{{"IFMA-zmm", true, true}, {"IFMA-ymm", false, true}, {"radix26", true, false}}
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			defer func(z, i bool) { impl.polyZMM, impl.polyIFMA = z, i }(impl.polyZMM, impl.polyIFMA)
			impl.polyZMM, impl.polyIFMA = v.zmm, v.ifma
			rng := rand.New(rand.NewPCG(1, 2))
			for _, suite := range []Suite{ChaCha20Poly1305, XChaCha20Poly1305} {
				raw := make([]byte, 32)
				key, _ := NewKey(suite, raw)
				for _, b := range []int{1, 3, 8, 17, 64, 70} {
					checkAgainstGeneric(t, AVX512, key, b, rng)
				}
			}
		})
	}
}

// checkAgainstGeneric seals and opens a batch of b ops of random lengths on tier and on Generic.
func checkAgainstGeneric(t *testing.T, tier Tier, key *Key, b int, rng *rand.Rand) {
	t.Helper()
	mk := func() []Op {
		ops := make([]Op, b)
		for i := range ops {
			n := rng.IntN(3000)
			if i%3 == 0 {
				n = rng.IntN(100)
			}
			src := make([]byte, n)
			for j := range src {
				src[j] = byte(j * (i + 1))
			}
			nonce := make([]byte, key.suite.NonceSize())
			nonce[0] = byte(i)
			ops[i] = Op{Key: key, Nonce: nonce, AD: src[:min(n, i)], Src: src, Dst: make([]byte, n+TagSize)}
		}
		return ops
	}
	got := mk()
	want := make([]Op, b)
	for i, op := range got {
		op.Dst = make([]byte, len(op.Dst))
		want[i] = op
	}
	tier.Seal(got)
	Generic.Seal(want)
	for i := range got {
		if !bytes.Equal(got[i].Dst, want[i].Dst) {
			t.Fatalf("%v Seal op %d of %d (len %d) differs from Generic", tier, i, b, len(got[i].Src))
		}
		got[i].Src, got[i].Dst = got[i].Dst, make([]byte, len(got[i].Src))
	}
	if failed := tier.Open(got); failed != 0 {
		t.Fatalf("%v Open of %d ops: %d failed", tier, b, failed)
	}
	for i := range got {
		if !bytes.Equal(got[i].Dst, want[i].Src) {
			t.Fatalf("%v Open op %d of %d (len %d): wrong plaintext", tier, i, b, len(got[i].Dst))
		}
	}
}

// lanePitch is the distance between the lanes' buffers in the kernel benchmarks: 4 KiB and a cache
// line, since lanes exactly 4 KiB apart make every store look like it may alias the other lanes'
// loads (4K aliasing) and measure that instead of the kernel.
const lanePitch = 4096 + 64

// BenchmarkPoly1305Kernels runs each Poly1305 kernel over 16 lanes x 4 KiB: the measurement behind
// impl.polyZMM.
func BenchmarkPoly1305Kernels(b *testing.B) {
	kernels := []struct {
		name string
		ok   bool
		run  func(*[15][16]uint64, *polyPtrs16, int, int)
	}{
		{"IFMA-zmm", impl.polyIFMA, poly1305IFMAZ},
		{"IFMA-ymm", impl.polyIFMA, poly1305IFMAY},
		{"AVX2", chachaAVX2, poly1305AVX2},
		{"AVX2Regs", chachaAVX2, poly1305AVX2Regs},
	}
	buf := make([]byte, 16*lanePitch)
	for _, k := range kernels {
		b.Run(k.name, func(b *testing.B) {
			if !k.ok {
				b.Skip("CPU lacks the features")
			}
			p := newPolyLanes()
			t := p.tab()
			for l := range 16 {
				p.ptrs.base[l] = unsafe.Pointer(&buf[l*lanePitch])
			}
			b.SetBytes(int64(len(buf)))
			for b.Loop() {
				k.run(&t.st, &p.ptrs, 4096/16, 16)
			}
		})
	}
}

// BenchmarkChaCha20Kernels runs each ChaCha20 lane kernel over 16 lanes x 4 KiB: the measurement
// behind impl.chachaAVX2Regs.
func BenchmarkChaCha20Kernels(b *testing.B) {
	buf := make([]byte, 16*lanePitch)
	for _, k := range []struct {
		name string
		tier Tier
		regs bool
	}{{"AVX512", AVX512, false}, {"AVX2", AVX2, false}, {"AVX2Regs", AVX2, true}} {
		b.Run(k.name, func(b *testing.B) {
			if !chachaHas(k.tier) {
				b.Skip("CPU lacks the features")
			}
			defer func(r bool) { impl.chachaAVX2Regs = r }(impl.chachaAVX2Regs)
			impl.chachaAVX2Regs = k.regs
			s := newStreamLanes()
			t := s.tab()
			b.SetBytes(int64(len(buf)))
			for b.Loop() {
				for l := range 16 { // lane l in place at buf[l*lanePitch:]
					s.ptrs.src[l] = unsafe.Pointer(&buf[l*lanePitch])
					s.ptrs.dst[l] = s.ptrs.src[l]
				}
				streamKernel(chachaLaneKernels(k.tier), t, &s.ptrs, 4096/64, 64, true)
			}
		})
	}
}

// BenchmarkChaChaStitchedMAC measures what the stitched MAC saves a long group of the AVX2 lanes:
// 16 lanes x 22 blocks of key stream and 16 x 88 MAC blocks (1420-byte messages), the stream and
// then the vector Poly1305 lanes against chachaXOR16MACAVX2Regs and its last call, and the stream
// alone: the measurement behind impl.chachaStitchedMAC.
func BenchmarkChaChaStitchedMAC(b *testing.B) {
	if !chachaHas(AVX2) {
		b.Skip("needs AVX2")
	}
	const streamBlocks, macBlocks = 22, 88
	x := newStitchedMACLanes()
	t, pt, lanes := x.s.tab(), x.p.tab(), x.lanes
	b.Run("stream+vectorMAC", func(b *testing.B) {
		for b.Loop() {
			chachaXOR16AVX2Regs(t, lanes(), streamBlocks, 64)
			poly1305AVX2Regs(&pt.st, &x.p.ptrs, macBlocks, 16)
		}
	})
	b.Run("stitched", func(b *testing.B) {
		var m laneMAC
		for b.Loop() {
			m = x.chain(0, 16, macBlocks)
			chachaXOR16MACAVX2Regs(t, lanes(), streamBlocks, 64, &m)
			chachaXOR16MACAVX2Regs(nil, nil, 0, 0, &m)
		}
	})
	b.Run("stream", func(b *testing.B) {
		for b.Loop() {
			chachaXOR16AVX2Regs(t, lanes(), streamBlocks, 64)
		}
	})
}

// stitchedMACLanes is what the stitched-MAC benchmarks share: 16 stream lanes over buf, in place,
// and 16 vector Poly1305 lanes over macBuf, lanePitch bytes a lane.
type stitchedMACLanes struct {
	s           streamLanes
	p           polyLanes
	buf, macBuf []byte
}

func newStitchedMACLanes() *stitchedMACLanes {
	x := &stitchedMACLanes{s: *newStreamLanes(), p: *newPolyLanes(),
		buf: make([]byte, 16*lanePitch), macBuf: make([]byte, 16*lanePitch)}
	for l := range 16 {
		x.p.ptrs.base[l] = unsafe.Pointer(&x.macBuf[l*lanePitch])
	}
	return x
}

// lanes points the stream lanes at the start of their buffers and returns them.
func (x *stitchedMACLanes) lanes() *chachaPtrs16 {
	for l := range 16 {
		x.s.ptrs.src[l] = unsafe.Pointer(&x.buf[l*lanePitch])
		x.s.ptrs.dst[l] = x.s.ptrs.src[l]
	}
	return &x.s.ptrs
}

// chain returns a laneMAC over n lanes' blocks of macBuf from lane first on, blocks each.
func (x *stitchedMACLanes) chain(first, n, blocks int) laneMAC {
	m := laneMAC{lanes: n, size: uintptr(16 * blocks)}
	for l := range n {
		m.msg[l] = unsafe.Pointer(&x.macBuf[(first+l)*lanePitch])
	}
	return m
}

// BenchmarkChaChaStitchedMACZMM is BenchmarkChaChaStitchedMAC for the zmm lanes on a QUIC-sized
// group (16 lanes x 19 blocks, 76 MAC blocks a lane): the stream, then the IFMA lanes on all 16;
// the stream with the chain on lanes 8-15 (its last call included), then the IFMA lanes on 0-7;
// and the stream alone. The MAC blocks the chain absorbs beside the stream are reported: the
// measurement behind impl.chachaStitchedMACZMM.
func BenchmarkChaChaStitchedMACZMM(b *testing.B) {
	if !chachaHas(AVX512) || !impl.polyIFMA {
		b.Skip("needs AVX-512 with IFMA")
	}
	const streamBlocks, macBlocks = 19, 76
	x := newStitchedMACLanes()
	t, pt, lanes := x.s.tab(), x.p.tab(), x.lanes
	for l := range 16 {
		t.mask[l] = ^uint64(0)
	}
	b.Run("stream+IFMA16", func(b *testing.B) {
		for b.Loop() {
			chachaXOR16AVX512(t, lanes(), streamBlocks, 64)
			poly1305IFMAZ(&pt.st, &x.p.ptrs, macBlocks, 16)
		}
	})
	b.Run("stitched+IFMA8", func(b *testing.B) {
		var m laneMAC
		beside := 0
		for b.Loop() {
			m = x.chain(8, 8, macBlocks)
			chachaXOR16MACAVX512(t, lanes(), streamBlocks, 64, &m)
			beside = m.lane*macBlocks + int(m.done)/16
			chachaXOR16MACAVX512(nil, nil, 0, 0, &m)
			poly1305IFMAYLanes8(&pt.st, &x.p.ptrs, macBlocks, 16)
		}
		b.ReportMetric(float64(beside), "blocks-beside")
	})
	b.Run("stream", func(b *testing.B) {
		for b.Loop() {
			chachaXOR16AVX512(t, lanes(), streamBlocks, 64)
		}
	})
}

// TestChaChaAVX2Kernels runs the AVX2 tier with each of its ChaCha20 and Poly1305 kernel sets, the
// one for 2-cycle cores (chachaXOR16AVX2, poly1305AVX2) and the one for 1-cycle cores
// (chachaXOR16AVX2Regs, poly1305AVX2Regs), whichever this CPU would select, against the Generic tier.
func TestChaChaAVX2Kernels(t *testing.T) {
	if !chachaHas(AVX2) {
		t.Skip("needs AVX2")
	}
	for _, regs := range []bool{false, true} {
		t.Run(fmt.Sprintf("regs=%v", regs), func(t *testing.T) {
			defer func(r, p bool) { impl.chachaAVX2Regs, impl.poly26Regs = r, p }(impl.chachaAVX2Regs, impl.poly26Regs)
			impl.chachaAVX2Regs, impl.poly26Regs = regs, regs
			rng := rand.New(rand.NewPCG(3, 4))
			for _, suite := range []Suite{ChaCha20Poly1305, XChaCha20Poly1305} {
				key, _ := NewKey(suite, make([]byte, 32))
				for _, b := range []int{1, 5, 8, 17, 64, 70} {
					checkAgainstGeneric(t, AVX2, key, b, rng)
				}
			}
		})
	}
}

// TestXORStream checks xorStream against a byte loop on every length up to past five 128-byte steps,
// in place and apart, with guard bytes after the output that must stay untouched.
func TestXORStream(t *testing.T) {
	if !chachaHas(AVX2) {
		t.Skip("needs AVX2")
	}
	for n := range 700 {
		src, ks := make([]byte, n+8), make([]byte, n+8)
		for i := range src {
			src[i], ks[i] = byte(i*7+3), byte(i*13+1)
		}
		want := append([]byte(nil), src...)
		for i := range n {
			want[i] ^= ks[i]
		}
		inPlace := append([]byte(nil), src...)
		xorStream(inPlace[:n], inPlace[:n], ks[:n])
		apart := bytes.Repeat([]byte{0xa5}, n+8)
		xorStream(apart[:n], src[:n], ks[:n])
		if !bytes.Equal(inPlace, want) || !bytes.Equal(apart[:n], want[:n]) || bytes.Count(apart[n:], []byte{0xa5}) != 8 {
			t.Fatalf("length %d: xorStream differs from the byte loop or wrote past the end", n)
		}
	}
}

// TestChaChaCoreVariants runs each SIMD tier with the choices impl makes from the core's latencies
// and zmm width, both ways whatever this CPU would select: tiny ops alone on the fused AVX2 kernel
// or not (chachaTinyFused), and the AVX512 tier's few-ops bound of full-width and of split zmm
// (chachaFewOpsAVX512), on batch sizes either side of each bound, against the Generic tier.
func TestChaChaCoreVariants(t *testing.T) {
	for _, tier := range kernelTiers {
		if !chachaHas(tier) {
			continue
		}
		for _, fused := range []bool{false, true} {
			for _, few := range []int{chachaFewOps, 11} {
				t.Run(fmt.Sprintf("%v/fused=%v/few=%d", tier, fused, few), func(t *testing.T) {
					defer func(f bool, n int) {
						impl.chachaTinyFused, impl.chachaFewOpsAVX512 = f, n
					}(impl.chachaTinyFused, impl.chachaFewOpsAVX512)
					impl.chachaTinyFused, impl.chachaFewOpsAVX512 = fused, few
					rng := rand.New(rand.NewPCG(5, uint64(few)))
					for _, suite := range []Suite{ChaCha20Poly1305, XChaCha20Poly1305} {
						key, _ := NewKey(suite, make([]byte, 32))
						for _, b := range []int{1, 2, 7, 8, 11, 12, 17} {
							checkAgainstGeneric(t, tier, key, b, rng)
						}
					}
				})
			}
		}
	}
}

// TestChaChaOneOpAVX512 opens single messages on the AVX512 tier's one-op path against the Generic
// tier: lengths either side of the 24-block pass, of the Poly1305 lanes' groups and of a kernel
// call's bound, AD of 0 to 300 bytes (within the kernel call's head blocks and beyond), random
// ciphertexts and ones of all one bits (the largest values the accumulator takes), and each
// tampered with, which must fail and leave Dst zeroed.
func TestChaChaOneOpAVX512(t *testing.T) {
	if !chachaHas(AVX512) {
		t.Skip("needs AVX-512")
	}
	rng := rand.New(rand.NewPCG(19, 20))
	for _, suite := range []Suite{ChaCha20Poly1305, XChaCha20Poly1305} {
		raw := make([]byte, 32)
		for i := range raw {
			raw[i] = byte(rng.Uint32())
		}
		key, _ := NewKey(suite, raw)
		for _, n := range []int{0, 10, 100, 128, 200, 961, 975, 1200, 1420, 1472, 1473, 3000, 16*maxPolyBlocks + 30} {
			for _, adLen := range []int{0, 5, 16, 21, 40, 128, 129, 300} {
				for _, ones := range []bool{false, true} {
					nonce := make([]byte, suite.NonceSize())
					nonce[0], nonce[1] = byte(n), byte(adLen)
					ad, pt := make([]byte, adLen), make([]byte, n)
					for i := range ad {
						ad[i] = byte(rng.Uint32())
					}
					for i := range pt {
						pt[i] = byte(rng.Uint32())
					}
					if ones { // the plaintext whose ciphertext is all ones: the key stream, inverted
						ks := []Op{{Key: key, Nonce: nonce, Src: make([]byte, n), Dst: make([]byte, n+TagSize)}}
						Generic.Seal(ks)
						for i := range pt {
							pt[i] = ^ks[0].Dst[i]
						}
					}
					seal := []Op{{Key: key, Nonce: nonce, AD: ad, Src: pt, Dst: make([]byte, n+TagSize)}}
					Generic.Seal(seal)
					ct := seal[0].Dst
					for _, tamper := range []int{-1, 0, n / 2, n + 3} {
						src := append([]byte(nil), ct...)
						if tamper >= 0 {
							src[tamper] ^= 0x20
						}
						open := []Op{{Key: key, Nonce: nonce, AD: ad, Src: src, Dst: make([]byte, n)}}
						failed := AVX512.Open(open)
						switch {
						case tamper < 0 && (failed != 0 || !bytes.Equal(open[0].Dst, pt)):
							t.Fatalf("%v n=%d ad=%d ones=%v: genuine message failed or differs", suite, n, adLen, ones)
						case tamper >= 0 && (failed != 1 || !isZeroBytes(open[0].Dst)):
							t.Fatalf("%v n=%d ad=%d ones=%v: forgery at %d opened", suite, n, adLen, ones, tamper)
						}
					}
				}
			}
		}
	}
}

// TestEncryptBlocksHeads runs EncryptBlocks of a ChaCha20 key on each AVX512 route, forced for every
// input count: the zmm lanes (chachaHeads16AVX512), the heads kernel (chachaHeadsAVX512) and the
// 4-block kernel, against the portable block function, on every input count up to past two calls
// (chachaHeadsPerCall), in place and not, with the bytes after the last output checked untouched
// (a part-filled lane pass stores under a mask).
func TestEncryptBlocksHeads(t *testing.T) {
	if !chachaHas(AVX512) {
		t.Skip("needs AVX-512")
	}
	rng := rand.New(rand.NewPCG(17, 18))
	random := func(b []byte) {
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
	}
	raw := make([]byte, 32)
	random(raw)
	k, _ := NewKey(ChaCha20Poly1305, raw)
	defer func(h bool, l int) { impl.chachaBlocksHeads, impl.chachaBlocksLanes = h, l }(
		impl.chachaBlocksHeads, impl.chachaBlocksLanes)
	for _, route := range []struct {
		name  string
		heads bool
		lanes int
	}{{"lanes", false, 1}, {"heads", true, 1 << 30}, {"4-block", false, 1 << 30}} {
		impl.chachaBlocksHeads, impl.chachaBlocksLanes = route.heads, route.lanes
		for n := range 2*chachaHeadsPerCall + 20 {
			src := make([][16]byte, n)
			for i := range src {
				random(src[i][:])
			}
			want := make([][16]byte, n)
			chachaBlocksGeneric(k, want, src)
			const guard = 2
			got := make([][16]byte, n+guard)
			random(got[n][:])
			random(got[n+1][:])
			after := [guard][16]byte(got[n:])
			k.EncryptBlocks(got[:n], src)
			inPlace := append(append([][16]byte(nil), src...), after[:]...)
			k.EncryptBlocks(inPlace[:n], inPlace[:n])
			for i := range want {
				if got[i] != want[i] || inPlace[i] != want[i] {
					t.Fatalf("%s, %d inputs: block %d differs", route.name, n, i)
				}
			}
			if [guard][16]byte(got[n:]) != after || [guard][16]byte(inPlace[n:]) != after {
				t.Fatalf("%s, %d inputs: wrote past the last output", route.name, n)
			}
		}
	}
}

// BenchmarkChaChaOneMACAVX2 measures an 8-block single-message pass alone, with 60 stitched MAC
// blocks (what chachaStitchedOpAVX2's Seal stitches), the 60 blocks alone in the kernel's scalar
// loop, and in the portable Poly1305.
func BenchmarkChaChaOneMACAVX2(b *testing.B) {
	if !chachaHas(AVX2) {
		b.Skip("needs AVX2")
	}
	var st [16]uint32
	buf := make([]byte, 8*64)
	msg := make([]byte, 60*16)
	mac := poly1305{r0: 0x0ffffffc0fffffff, r1: 0x0ffffffc0ffffffc}
	b.Run("pass", func(b *testing.B) {
		for b.Loop() {
			chachaXOR8OneAVX2(&st, &buf[0], &buf[0], len(buf))
		}
	})
	b.Run("pass+MAC60", func(b *testing.B) {
		for b.Loop() {
			chachaXOR8OneMACAVX2(&st, &buf[0], &buf[0], len(buf), &mac, &msg[0], 60)
		}
	})
	b.Run("MAC60", func(b *testing.B) {
		for b.Loop() {
			chachaXOR8OneMACAVX2(&st, nil, nil, 0, &mac, &msg[0], 60)
		}
	})
	b.Run("portableMAC60", func(b *testing.B) {
		for b.Loop() {
			mac.blocks(msg)
		}
	})
}

// TestChaChaTableLayout checks the table offsets that the generator (_asm/chacha) hard-codes.
func TestChaChaTableLayout(t *testing.T) {
	var s streamTable
	for _, f := range []struct {
		name      string
		got, want uintptr
	}{
		{"streamTable.addr", unsafe.Offsetof(s.addr), 17 * 64},
		{"streamTable.spill", unsafe.Offsetof(s.spill), 17*64 + 2*16*8},
		{"streamTable.mask", unsafe.Offsetof(s.mask), 17*64 + 2*16*8 + 16*64},
		{"chachaPtrs16.off", unsafe.Offsetof(chachaPtrs16{}.off), 32 * 8},
		{"polyPtrs16.off", unsafe.Offsetof(polyPtrs16{}.off), 16 * 8},
		{"polyTable.scratch", unsafe.Offsetof(polyTable{}.scratch), 15 * 16 * 8},
		{"polyOne26.h0", unsafe.Offsetof(polyOne26{}.h0), 5 * 8 * 8},
		{"polyOne26.r8", unsafe.Offsetof(polyOne26{}.r8), 5*8*8 + 5*8},
		{"poly1305.r1 (chachaXOR8OneMACAVX2)", unsafe.Offsetof(poly1305{}.r1), 8},
		{"poly1305.h (chachaXOR8OneMACAVX2)", unsafe.Offsetof(poly1305{}.h), 2 * 8},
		{"chachaTinyLane.nonce", unsafe.Offsetof(chachaTinyLane{}.nonce), 8},
		{"chachaTinyLane.dst", unsafe.Offsetof(chachaTinyLane{}.dst), 16},
		{"chachaTinyLane.src", unsafe.Offsetof(chachaTinyLane{}.src), 24},
		{"chachaTinyLane.n", unsafe.Offsetof(chachaTinyLane{}.n), 32},
		{"chachaTinyLane.ad", unsafe.Offsetof(chachaTinyLane{}.ad), 40},
		{"chachaTinyLane.adLen", unsafe.Offsetof(chachaTinyLane{}.adLen), 48},
		{"chachaTinyLane.tag", unsafe.Offsetof(chachaTinyLane{}.tag), 56},
		{"chachaTinyLane size", unsafe.Sizeof(chachaTinyLane{}), 64},
		{"chachaTinyPipeLane.ks", unsafe.Offsetof(chachaTinyPipeLane{}.ks), 144},
		{"chachaTinyPipeLane.r", unsafe.Offsetof(chachaTinyPipeLane{}.r), 208},
		{"chachaTinyPipeLane.s", unsafe.Offsetof(chachaTinyPipeLane{}.s), 224},
		{"chachaTinyPipeLane.h", unsafe.Offsetof(chachaTinyPipeLane{}.h), 240},
		{"chachaTinyPipeLane.blocks", unsafe.Offsetof(chachaTinyPipeLane{}.blocks), 264},
		{"chachaTinyPipeLane.ct", unsafe.Offsetof(chachaTinyPipeLane{}.ct), 272},
		{"chachaTinyPipeLane.n", unsafe.Offsetof(chachaTinyPipeLane{}.n), 280},
		{"chachaTinyPipeLane size", unsafe.Sizeof(chachaTinyPipeLane{}), 288},
		{"laneMAC.lane", unsafe.Offsetof(laneMAC{}.lane), 8},
		{"laneMAC.lanes", unsafe.Offsetof(laneMAC{}.lanes), 16},
		{"laneMAC.size", unsafe.Offsetof(laneMAC{}.size), 24},
		{"laneMAC.end", unsafe.Offsetof(laneMAC{}.end), 32},
		{"laneMAC.r", unsafe.Offsetof(laneMAC{}.r), 40},
		{"laneMAC.mac", unsafe.Offsetof(laneMAC{}.mac), 56},
		{"poly1305 size (laneMAC.mac)", unsafe.Sizeof(poly1305{}), 56},
		{"laneMAC.msg", unsafe.Offsetof(laneMAC{}.msg), 56 + 16*56},
	} {
		if f.got != f.want {
			t.Errorf("%s at %d, the kernels expect %d", f.name, f.got, f.want)
		}
	}
}

// TestChaChaKernelCounters runs every ChaCha20 kernel with its lanes' block counters just below
// 2^32 and compares the key stream with the portable chachaBlock, whose counter wraps the same
// way. The AEAD never gets there (RFC 8439 section 2.8 limits a message to 2^38-64 bytes, counters 1
// to 2^32-1), but the lanes' counter arithmetic is per lane and must match the portable one exactly,
// also when lanes advance by 16 (the single-message kernels).
func TestChaChaKernelCounters(t *testing.T) {
	if !chachaHas(AVX2) {
		t.Skip("needs AVX2")
	}
	var key [8]uint32
	for i := range key {
		key[i] = uint32(i) * 0x01010101
	}
	nonce := [3]uint32{7, 8, 9}
	const start = 1<<32 - 21
	want := func(b uint32) []byte { // key-stream block start+b
		var out [64]byte
		chachaBlock(&out, &key, start+b, &nonce)
		return out[:]
	}
	var st [16]uint32
	st[0], st[1], st[2], st[3] = sigma0, sigma1, sigma2, sigma3
	copy(st[4:12], key[:])
	st[12] = start
	st[13], st[14], st[15] = nonce[0], nonce[1], nonce[2]
	check := func(name string, ks []byte) {
		t.Helper()
		for b := 0; b < len(ks)/64; b++ {
			if !bytes.Equal(ks[64*b:64*b+64], want(uint32(b))) {
				t.Fatalf("%s: block %d (counter %#x) differs from chachaBlock", name, b, uint32(start+b))
			}
		}
	}
	if chachaHas(AVX512) {
		var ks [24 * 64]byte
		chachaKS24AVX512(&st, &ks)
		check("chachaKS24AVX512", ks[:])
		chachaKS8AVX512(&st, (*[8 * 64]byte)(ks[:8*64]))
		check("chachaKS8AVX512", ks[:8*64])
		chachaKS4AVX512(&st, (*[4 * 64]byte)(ks[:4*64]))
		check("chachaKS4AVX512", ks[:4*64])
		clear(ks[:])
		chachaXOR16OneAVX512(&st, &ks[0], &ks[0], 24*64-5) // two passes, the last block partial
		check("chachaXOR16OneAVX512", ks[:23*64])
		var part [9 * 64]byte // block 0, blocks 16-23
		mid := make([]byte, 15*64)
		chachaXOR24AVX512(&st, &part, &mid[0], &chachaZeros[0]) // blocks 1-15 XORed into zeros
		check("chachaXOR24AVX512", append(append(part[:64:64], mid...), part[64:]...))
	}
	{
		var ks [24 * 64]byte
		chachaKS2Scalar(&st, (*[2 * 64]byte)(ks[:2*64]))
		check("chachaKS2Scalar", ks[:2*64])
		chachaKS4AVX2(&st, (*[4 * 64]byte)(ks[:4*64]))
		check("chachaKS4AVX2", ks[:4*64])
		clear(ks[:])
		chachaXOR8OneAVX2(&st, &ks[0], &ks[0], 24*64) // three passes
		check("chachaXOR8OneAVX2", ks[:])
		var ks2 [32 * 64]byte
		chachaXOR16OneAVX2(&st, &ks2[0], &ks2[0], 32*64) // two passes
		check("chachaXOR16OneAVX2", ks2[:])
	}
	// The lane kernels: lane l runs blocks l, l+16, ... (counter step 16, pointer step 1 KiB).
	for _, tier := range []Tier{AVX512, AVX2} {
		if !chachaHas(tier) {
			continue
		}
		s := newStreamLanes()
		tab := s.start(chachaLaneKernels(tier))
		buf := make([]byte, 3*16*64)
		for l := range 16 {
			for w := range 8 {
				tab.rows[4+w][l] = key[w]
			}
			tab.rows[12][l] = start + uint32(l)
			tab.rows[13][l], tab.rows[14][l], tab.rows[15][l] = nonce[0], nonce[1], nonce[2]
			tab.rows[16][l] = 16
			s.ptrs.src[l] = unsafe.Pointer(&buf[0])
			s.ptrs.dst[l] = unsafe.Pointer(&buf[0])
			s.ptrs.off[l] = uintptr(64 * l)
		}
		streamKernel(chachaLaneKernels(tier), tab, &s.ptrs, 3, 16*64, true)
		check(fmt.Sprintf("%v lane kernel", tier), buf)
	}
}

// TestChaChaOneMACAVX2 checks each stitched one-message kernel (chachaXOR8OneMACAVX2 and, for
// 1-cycle cores, chachaXOR8OneMACAVX2Regs) against its plain pass and poly1305.blocks: the plain
// pass's key stream and the portable Poly1305's accumulator, for 0 to 3 passes, each number of MAC
// blocks around what the passes' steps take (80 per pass) and a few beyond, from an accumulator that
// is not zero.
func TestChaChaOneMACAVX2(t *testing.T) {
	if !chachaHas(AVX2) {
		t.Skip("needs AVX2")
	}
	for _, k := range []struct {
		name  string
		plain func(*[16]uint32, *byte, *byte, int)
		mac   func(*[16]uint32, *byte, *byte, int, *poly1305, *byte, int)
	}{
		{"chachaXOR8OneMACAVX2", chachaXOR8OneAVX2, chachaXOR8OneMACAVX2},
		{"chachaXOR8OneMACAVX2Regs", chachaXOR8OneAVX2Regs, chachaXOR8OneMACAVX2Regs},
	} {
		t.Run(k.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(5, 6))
			var st [16]uint32
			for i := range st {
				st[i] = rng.Uint32()
			}
			msg := make([]byte, 300*16)
			for i := range msg {
				msg[i] = byte(rng.Uint32())
			}
			for passes := range 4 {
				n := passes * 8 * 64
				src := make([]byte, max(n, 1))
				for i := range src {
					src[i] = byte(i * 7)
				}
				want := make([]byte, len(src))
				if n > 0 {
					k.plain(&st, &want[0], &src[0], n)
				}
				for _, blocks := range []int{0, 1, 2, 79, 80, 81, 80 * passes, 80*passes + 1, 300} {
					var ref, got poly1305
					key := make([]byte, 32)
					for i := range key {
						key[i] = byte(rng.Uint32())
					}
					ref.init(key)
					ref.h = [3]uint64{rng.Uint64(), rng.Uint64(), 4} // within the bounds between blocks
					got = ref
					ref.blocks(msg[:16*blocks])
					dst := make([]byte, len(src))
					k.mac(&st, &dst[0], &src[0], n, &got, &msg[0], blocks)
					if !bytes.Equal(dst[:n], want[:n]) {
						t.Fatalf("%d passes, %d MAC blocks: key stream differs", passes, blocks)
					}
					if got != ref {
						t.Fatalf("%d passes, %d MAC blocks: accumulator %x, want %x", passes, blocks, got.h, ref.h)
					}
				}
			}
		})
	}
}

// TestPoly1305IFMAPowers checks poly1305IFMAPowers' rows against r^k computed with math/big, mod
// 2^130-5: the final multipliers r^(8-c) and r^(4-c) in lanes 2c and 2c+1, and 8 more for the group
// before the last, r^16 and r in every lane, each with its two rows of 20 times limbs 1 and 2, for
// clamped keys with every r bit set, none set, and random ones.
func TestPoly1305IFMAPowers(t *testing.T) {
	if !chachaHas(AVX512) || !impl.polyIFMA {
		t.Skip("needs AVX-512 IFMA")
	}
	p := new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), 130), big.NewInt(5))
	rng := rand.New(rand.NewPCG(9, 10))
	keys := [][32]byte{{}, {}}
	for i := range 16 {
		keys[1][i] = 0xff
	}
	for range 50 {
		var k [32]byte
		for i := range k {
			k[i] = byte(rng.Uint32())
		}
		keys = append(keys, k)
	}
	for _, key := range keys {
		r := poly1305R44(&key)
		var st polyOne
		poly1305IFMAPowers(&st, &r)
		rInt := func(x [3]uint64) *big.Int {
			v := new(big.Int).SetUint64(x[2])
			v.Lsh(v, 44).Add(v, new(big.Int).SetUint64(x[1]))
			return v.Lsh(v, 44).Add(v, new(big.Int).SetUint64(x[0]))
		}
		want := func(e int) *big.Int { return new(big.Int).Exp(rInt(r), big.NewInt(int64(e)), p) }
		check := func(what string, first, lane, e int) {
			t.Helper()
			x := [3]uint64{st[first][lane], st[first+1][lane], st[first+2][lane]}
			if x[0] >= 1<<44+1<<17 || x[1] >= 1<<44 || x[2] >= 1<<42 {
				t.Fatalf("r = %x: %s, lane %d: limbs %x out of bounds", r, what, lane, x)
			}
			if got := new(big.Int).Mod(rInt(x), p); got.Cmp(want(e)) != 0 {
				t.Fatalf("r = %x: %s, lane %d: %x, want r^%d = %x", r, what, lane, got, e, want(e))
			}
			if st[first+3][lane] != 20*x[1] || st[first+4][lane] != 20*x[2] {
				t.Fatalf("r = %x: %s, lane %d: the 20-times rows are wrong", r, what, lane)
			}
		}
		for l := range 8 {
			check("r^16 row", polyOneRowR16, l, 16)
			check("r row", polyOneRowR, l, 1)
			e := 4 - l/2
			if l%2 == 0 {
				e = 8 - l/2
			}
			check("final multiplier", polyOneRowEnd, l, e)
			check("multiplier of the group before the last", polyOneRowEnd2, l, e+8)
		}
	}
}

// TestPoly1305FinishZ checks the 16-lane tag finish (the lengths block, then the final reduction)
// against poly1305Mul44 and poly1305Finish44 on accumulators at the kernels' limb bounds, around
// p = 2^130-5 and random, and its verdict on equal and unequal tags.
func TestPoly1305FinishZ(t *testing.T) {
	if !chachaHas(AVX512) || !impl.polyIFMA {
		t.Skip("needs AVX-512 with IFMA")
	}
	rng := rand.New(rand.NewPCG(3, 4))
	edges := [][3]uint64{
		{0, 0, 0},
		{mask44 + 1<<17 - 1, mask44, 1<<42 - 1}, // the largest the kernels leave
		{mask44 - 5, mask44, 1<<42 - 1},         // p - 1
		{mask44 - 4, mask44, 1<<42 - 1},         // p
		{mask44 - 3, mask44, 1<<42 - 1},         // p + 1
		{mask44, mask44, 1<<42 - 1},             // 2^130 - 1
		{4, 0, 0},
	}
	var buf [64 + unsafe.Sizeof(polyTable{})]byte
	tab := (*polyTable)(unsafe.Add(unsafe.Pointer(&buf[0]), -uintptr(unsafe.Pointer(&buf[0]))&63))
	for round := range 64 {
		var want [16][TagSize]byte
		var wrong uint32
		for l := range 16 {
			h := [3]uint64{rng.Uint64() % (mask44 + 1<<17), rng.Uint64() & mask44, rng.Uint64() % (1 << 42)}
			if k := round*16 + l; k < len(edges) {
				h = edges[k]
			}
			s0, s1 := rng.Uint64(), rng.Uint64()
			var key [32]byte
			for i := range 16 {
				key[i] = byte(rng.Uint32())
			}
			lenAD, lenCT := rng.Uint64()>>rng.IntN(64), rng.Uint64()>>rng.IntN(64)
			if round%3 == 0 {
				s0, s1 = ^uint64(0), ^uint64(0) // carries through all of s
				for i := range 16 {
					key[i] = 0xff
				}
				lenAD, lenCT = ^uint64(0), ^uint64(0)
			}
			st := &tab.st
			st[0][l], st[1][l], st[2][l] = h[0], h[1], h[2] // the accumulator rows
			r := poly1305R44(&key)
			st[3][l], st[4][l], st[5][l], st[6][l], st[7][l] = r[0], r[1], r[2], 20*r[1], 20*r[2] // the multiplier rows
			st[polyRowKeyS][l], st[polyRowKeyS+1][l] = s0, s1
			binary.LittleEndian.PutUint64(tab.scratch[l][32:], lenAD)
			binary.LittleEndian.PutUint64(tab.scratch[l][40:], lenCT)
			// h + m with the 2^128 bit, carried to limbs below 2^44 (2^42 + 2 for limb 2), times r.
			m := [3]uint64{lenAD & mask44, (lenAD>>44 | lenCT<<20) & mask44, lenCT>>24 | 1<<40}
			a := [3]uint64{h[0] + m[0], h[1] + m[1], h[2] + m[2]}
			a[1] += a[0] >> 44
			a[0] &= mask44
			a[2] += a[1] >> 44
			a[1] &= mask44
			a[0] += a[2] >> 42 * 5
			a[2] &= 1<<42 - 1
			hm := poly1305Mul44(a, r)
			poly1305Finish44(&want[l], hm[0], hm[1], hm[2], s0, s1)
			exp := want[l]
			if rng.IntN(2) == 0 {
				exp[rng.IntN(TagSize)] ^= 1 << rng.IntN(8)
				wrong |= 1 << l
			}
			st[polyRowWant][l] = binary.LittleEndian.Uint64(exp[0:])
			st[polyRowWant+1][l] = binary.LittleEndian.Uint64(exp[8:])
		}
		eq := poly1305FinishIFMAZ(&tab.st)
		for l := range 16 {
			var got [TagSize]byte
			binary.LittleEndian.PutUint64(got[0:], tab.st[polyRowTag][l])
			binary.LittleEndian.PutUint64(got[8:], tab.st[polyRowTag+1][l])
			if got != want[l] {
				t.Fatalf("round %d lane %d: tag %x, want %x", round, l, got, want[l])
			}
		}
		if eq != int(^wrong&0xffff) {
			t.Fatalf("round %d: verdict %016b, want %016b", round, eq, ^wrong&0xffff)
		}
	}
}

// TestPoly1305Short checks the scalar radix-2^64 MAC against golang.org/x/crypto/poly1305 over the
// RFC 8439 section 2.8 input, for every AD and ciphertext length up to 80 bytes, with random keys and
// with all-ones keys and messages (the largest accumulators, r and s).
func TestPoly1305Short(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for round := range 4 {
		for adLen := 0; adLen <= 80; adLen += 1 + adLen/8 {
			for ctLen := range 81 {
				ad, ct, key, want := aeadMACCase(rng, round == 0, adLen, ctLen)
				if got := poly1305AEAD(ad, ct, &key); got != want {
					t.Fatalf("round %d, AD %d, ciphertext %d bytes: tag %x, want %x", round, adLen, ctLen, got, want)
				}
			}
		}
	}
}

// aeadMACCase makes an AD and ciphertext of the given lengths and a one-time key, random from rng or
// all ones (the largest limbs, r and s), and their RFC 8439 section 2.8 tag by
// golang.org/x/crypto/poly1305 over the padded MAC input.
func aeadMACCase(rng *rand.Rand, allOnes bool, adLen, ctLen int) (ad, ct []byte, key [32]byte, want [16]byte) {
	msg := make([]byte, adLen+ctLen)
	for i := range key {
		key[i] = byte(rng.Uint32())
	}
	for i := range msg {
		msg[i] = byte(rng.Uint32())
	}
	if allOnes {
		for i := range key {
			key[i] = 0xff
		}
		for i := range msg {
			msg[i] = 0xff
		}
	}
	ad, ct = msg[:adLen], msg[adLen:]
	var in []byte
	in = append(in, ad...)
	in = append(in, make([]byte, -adLen&15)...)
	in = append(in, ct...)
	in = append(in, make([]byte, -ctLen&15)...)
	in = binary.LittleEndian.AppendUint64(in, uint64(adLen))
	in = binary.LittleEndian.AppendUint64(in, uint64(ctLen))
	xpoly1305.Sum(&want, in, &key)
	return ad, ct, key, want
}

// TestPoly1305One checks the single-message Poly1305s of the SIMD tiers (poly1305One: IFMA lanes
// with two accumulators taking the groups of 8 blocks in turns; poly1305OneAVX2: eight lanes in r^8,
// then the portable Poly1305) against golang.org/x/crypto/poly1305 on the AEAD's MAC input: 84
// ciphertext lengths up to 1500 bytes (every one up to 16, then steps of a sixteenth, so every count
// of groups of 8 blocks up to 11) with AD of 0 to 300 bytes, and two lengths beyond one kernel call,
// with all-ones keys and messages (the largest limbs) in the first round. poly1305One's state is
// reused from call to call, as oneOpScratches reuses it, and must be all zero after each.
func TestPoly1305One(t *testing.T) {
	var st polyOne
	impls := []struct {
		name string
		ok   bool
		mac  func(ad, ct []byte, key *[32]byte) [TagSize]byte
	}{
		{"poly1305One", chachaHas(AVX512) && impl.polyIFMA, func(ad, ct []byte, key *[32]byte) [TagSize]byte {
			return poly1305One(ad, ct, len(ad), len(ct), key, &st)
		}},
		{"poly1305OneAVX2", chachaHas(AVX2), poly1305OneAVX2},
	}
	for _, m := range impls {
		t.Run(m.name, func(t *testing.T) {
			if !m.ok {
				t.Skip("CPU lacks the features")
			}
			rng := rand.New(rand.NewPCG(5, 6))
			for round := range 2 {
				for _, adLen := range []int{0, 1, 13, 16, 100, 127, 128, 129, 300} {
					ctLens := []int{1<<16 + 300, 1<<17 + 4096 + 17} // more than one kernel call
					for ctLen := 0; ctLen <= 1500; ctLen += 1 + ctLen/16 {
						ctLens = append(ctLens, ctLen)
					}
					for _, ctLen := range ctLens {
						ad, ct, key, want := aeadMACCase(rng, round == 0, adLen, ctLen)
						if got := m.mac(ad, ct, &key); got != want {
							t.Fatalf("round %d, AD %d, ciphertext %d bytes: tag %x, want %x", round, adLen, ctLen, got, want)
						}
						if st != (polyOne{}) {
							t.Fatalf("round %d, AD %d, ciphertext %d bytes: state left behind", round, adLen, ctLen)
						}
					}
				}
			}
		})
	}
}

// TestChaChaOneOpLengths runs single ops (the few-ops path, chachaOneOp) on every SIMD tier against
// the Generic tier, at the lengths where it changes kernels: around one block (chachaTinyOp,
// chachaKS2Scalar), the 4-, 8- and 16-block passes and whole passes after them, and the MAC length at which
// the AVX2 tier switches to its vector Poly1305 (chachaScalarMACAVX2) or to the stitched MAC
// (chachaStitchedOpAVX2, 961 to 1472 bytes), with and without AD, apart and in place. After each
// call the scratch it put back in oneOpScratches (the one the pool returns next) must be all zero.
func TestChaChaOneOpLengths(t *testing.T) {
	wiped := func(what string, tier Tier, suite Suite, n, adLen int) {
		t.Helper()
		sc := oneOpScratches.Get().(*oneOpScratch)
		defer oneOpScratches.Put(sc)
		if *sc != (oneOpScratch{}) {
			t.Fatalf("%v %v %s of %d bytes, AD %d: scratch not wiped", tier, suite, what, n, adLen)
		}
	}
	var lengths []int
	for _, b := range []int{0, 64, 192, 256, 448, 512, 960, 1024, 1420, 1472, 1536, 2048, 2560, 3072, 17 * 1024} {
		for d := -17; d <= 17; d++ {
			if n := b + d; n >= 0 && (d > -3 && d < 3 || d%16 == 0 || d == 17 || d == -17) {
				lengths = append(lengths, n)
			}
		}
	}
	rng := rand.New(rand.NewPCG(7, 8))
	for _, tier := range []Tier{AVX512, AVX2} {
		if !chachaHas(tier) {
			continue
		}
		for _, suite := range []Suite{ChaCha20Poly1305, XChaCha20Poly1305} {
			raw := make([]byte, 32)
			for i := range raw {
				raw[i] = byte(rng.Uint32())
			}
			key, _ := NewKey(suite, raw)
			for _, adLen := range []int{0, 13, 200} {
				for _, n := range lengths {
					src := make([]byte, adLen+n)
					for i := range src {
						src[i] = byte(rng.Uint32())
					}
					nonce := make([]byte, suite.NonceSize())
					nonce[0] = byte(n)
					op := Op{Key: key, Nonce: nonce, AD: src[:adLen], Src: src[adLen:], Dst: make([]byte, n+TagSize)}
					want := op
					want.Dst = make([]byte, n+TagSize)
					got := []Op{op}
					tier.Seal(got)
					Generic.Seal([]Op{want})
					if !bytes.Equal(got[0].Dst, want.Dst) {
						t.Fatalf("%v %v Seal of %d bytes, AD %d: differs from Generic", tier, suite, n, adLen)
					}
					wiped("Seal", tier, suite, n, adLen)
					open := []Op{{Key: key, Nonce: nonce, AD: op.AD, Src: got[0].Dst, Dst: make([]byte, n)}}
					if tier.Open(open) != 0 || !bytes.Equal(open[0].Dst, op.Src) {
						t.Fatalf("%v %v Open of %d bytes, AD %d: failed or wrong plaintext", tier, suite, n, adLen)
					}
					wiped("Open", tier, suite, n, adLen)
					buf := make([]byte, n+TagSize) // in place: Dst starts at Src's first byte
					copy(buf, op.Src)
					tier.Seal([]Op{{Key: key, Nonce: nonce, AD: op.AD, Src: buf[:n], Dst: buf}})
					if !bytes.Equal(buf, want.Dst) {
						t.Fatalf("%v %v Seal of %d bytes in place, AD %d: differs from Generic", tier, suite, n, adLen)
					}
					if tier.Open([]Op{{Key: key, Nonce: nonce, AD: op.AD, Src: buf, Dst: buf[:n]}}) != 0 || !bytes.Equal(buf[:n], op.Src) {
						t.Fatalf("%v %v Open of %d bytes in place, AD %d: failed or wrong plaintext", tier, suite, n, adLen)
					}
					got[0].Dst[n] ^= 1 // a forged tag: rejected, Dst zeroed
					open = []Op{{Key: key, Nonce: nonce, AD: op.AD, Src: got[0].Dst, Dst: make([]byte, n)}}
					if tier.Open(open) != 1 || open[0].Err == nil || !bytes.Equal(open[0].Dst, make([]byte, n)) {
						t.Fatalf("%v %v Open of %d bytes, AD %d: forged tag not rejected", tier, suite, n, adLen)
					}
					wiped("forged Open", tier, suite, n, adLen)
				}
			}
		}
	}
}

// TestPoly1305Finish44 checks poly1305Finish44 against math/big on limbs up to its bound (below 2^50),
// as poly1305IFMAOne's sum of lanes leaves them: random ones, and p, 2^130 and their neighbours with
// multiples of 2^44 moved from one limb to the one below.
func TestPoly1305Finish44(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	p := new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), 130), big.NewInt(5))
	var edges [][3]uint64
	for _, v := range []uint64{0, 1, 4, 5, 6} { // 2^130 - v: p + 1, p, p - 1, ...
		h := [3]uint64{mask44 + 1 - v, mask44, 1<<42 - 1}
		for _, move := range []uint64{0, 1, 1 << 5, 1<<49>>44 - 1} {
			edges = append(edges, [3]uint64{h[0] + move<<44, h[1] - move, h[2]},
				[3]uint64{h[0], h[1] + move<<44, h[2] - move})
		}
	}
	edges = append(edges, [3]uint64{1<<50 - 1, 1<<50 - 1, 1<<50 - 1})
	for i := range 20000 {
		h := [3]uint64{rng.Uint64() >> 14, rng.Uint64() >> 14, rng.Uint64() >> 14}
		if i < len(edges) {
			h = edges[i]
		}
		s0, s1 := rng.Uint64(), rng.Uint64()
		if i%3 == 0 {
			s0, s1 = ^uint64(0), ^uint64(0)
		}
		var got [TagSize]byte
		poly1305Finish44(&got, h[0], h[1], h[2], s0, s1)
		v := new(big.Int).SetUint64(h[2])
		v.Lsh(v, 44).Add(v, new(big.Int).SetUint64(h[1]))
		v.Lsh(v, 44).Add(v, new(big.Int).SetUint64(h[0]))
		v.Mod(v, p)
		sv := new(big.Int).SetUint64(s1)
		sv.Lsh(sv, 64).Add(sv, new(big.Int).SetUint64(s0))
		v.Add(v, sv)
		var want [TagSize]byte
		b := v.FillBytes(make([]byte, 32))
		for j := range TagSize {
			want[j] = b[31-j] // little endian, mod 2^128
		}
		if got != want {
			t.Fatalf("limbs %x, s %x %x: tag %x, want %x", h, s0, s1, got, want)
		}
	}
}

// TestPoly1305Finish26 checks the radix-2^26 tag finish against the radix-2^44 one (from26, then
// poly1305Finish44) on accumulators at the kernels' limb bounds, around p = 2^130-5 and random.
func TestPoly1305Finish26(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	const m = limb26
	edges := [][5]uint64{
		{0, 0, 0, 0, 0},
		{m, m + 1<<11, m, m, m}, // the largest the kernels leave
		{m - 5, m, m, m, m},     // p - 1
		{m - 4, m, m, m, m},     // p
		{m - 3, m, m, m, m},     // p + 1
		{m, m, m, m, m},         // 2^130 - 1
		{4, 0, 0, 0, 0},
	}
	for i := range 10000 {
		w := [5]uint64{rng.Uint64() & m, rng.Uint64() % (m + 1<<11), rng.Uint64() & m, rng.Uint64() & m, rng.Uint64() & m}
		if i < len(edges) {
			w = edges[i]
		}
		s0, s1 := rng.Uint64(), rng.Uint64()
		if i%3 == 0 {
			s0, s1 = ^uint64(0), ^uint64(0)
		}
		var got, want [TagSize]byte
		poly1305Finish26(&got, w[0], w[1], w[2], w[3], w[4], s0, s1)
		h := from26(w)
		poly1305Finish44(&want, h[0], h[1], h[2], s0, s1)
		if got != want {
			t.Fatalf("limbs %x, s %x %x: tag %x, want %x", w, s0, s1, got, want)
		}
	}
}
