// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

//go:build gc && !purego

package kernels

// Internal tests of the amd64 AES-GCM kernels: the memory layouts the generator hard-codes, the key
// expansion against FIPS 197, the counter wrap of inc32 driven through the kernels directly, both AVX2
// kernels whichever this CPU picks, and the wiping of key material.

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"testing"
	"unsafe"

	"github.com/wirebatch/wirebatch/internal/benchshape"
)

// TestGCMLayout checks the offsets _asm/gcm/layout.go hard-codes against the Go types.
func TestGCMLayout(t *testing.T) {
	var d gcmDesc
	var tab gcmTable
	for _, c := range []struct {
		name      string
		got, want uintptr
	}{
		{"gcmDesc.tab", unsafe.Offsetof(d.tab), 0},
		{"gcmDesc.dst", unsafe.Offsetof(d.dst), 8},
		{"gcmDesc.src", unsafe.Offsetof(d.src), 16},
		{"gcmDesc.n", unsafe.Offsetof(d.n), 24},
		{"gcmDesc.adLen", unsafe.Offsetof(d.adLen), 32},
		{"gcmDesc.ad", unsafe.Offsetof(d.ad), 40},
		{"gcmDesc.tag", unsafe.Offsetof(d.tag), 48},
		{"gcmDesc.lens", unsafe.Offsetof(d.lens), 56},
		{"gcmDesc.y", unsafe.Offsetof(d.y), 72},
		{"gcmDesc.ctr", unsafe.Offsetof(d.ctr), 88},
		{"gcmDesc.j0", unsafe.Offsetof(d.j0), 104},
		{"gcmDesc.nonce", unsafe.Offsetof(d.nonce), 120},
		{"sizeof gcmDesc", unsafe.Sizeof(d), 128},
		{"gcmTable.rk", unsafe.Offsetof(tab.rk), 0},
		{"gcmTable.h", unsafe.Offsetof(tab.h), 960},
		{"gcmTable.stride", unsafe.Offsetof(tab.stride), 1344},
		{"gcmTable.hk", unsafe.Offsetof(tab.hk), 1600},
		{"gcmTable.strideK", unsafe.Offsetof(tab.strideK), 1984},
		{"gcmTable.nr", unsafe.Offsetof(tab.nr), 2240},
	} {
		if c.got != c.want {
			t.Errorf("%s at %d, the generator assumes %d", c.name, c.got, c.want)
		}
	}
	if !gcmAVX2OK {
		return
	}
	for _, size := range []int{16, 24, 32} {
		k, err := NewKey(map[int]Suite{16: AES128GCM, 24: AES192GCM, 32: AES256GCM}[size], make([]byte, size))
		if err != nil {
			t.Fatal(err)
		}
		if p := uintptr(unsafe.Pointer(k.gcm.asm.tab)); p%64 != 0 {
			t.Errorf("key table at %#x, not 64-byte aligned", p)
		}
	}
}

// TestAESKeyExpansion checks the round keys against FIPS 197 appendix A (the last round key of each
// example) and every round count.
func TestAESKeyExpansion(t *testing.T) {
	if !gcmAVX2OK {
		t.Skip("no AES-NI: the key table is not built")
	}
	for _, c := range []struct {
		key, last string
		nr        int
	}{
		{"2b7e151628aed2a6abf7158809cf4f3c", "d014f9a8c9ee2589e13f0cc8b6630ca6", 10},                                 // A.1
		{"8e73b0f7da0e6452c810f32b809079e562f8ead2522c6b7b", "e98ba06f448c773c8ecc720401002202", 12},                 // A.2
		{"603deb1015ca71be2b73aef0857d77811f352c073b6108d72d9810a30914dff4", "fe4890d1e6188d0b046df344706c631e", 14}, // A.3
	} {
		key, _ := hex.DecodeString(c.key)
		want, _ := hex.DecodeString(c.last)
		var rk [15][64]byte
		if nr := expandAESKey(key, &rk); nr != c.nr {
			t.Fatalf("%d-byte key: %d rounds, want %d", len(key), nr, c.nr)
		}
		for lane := 0; lane < 64; lane += 16 {
			if got := rk[c.nr][lane : lane+16]; !bytes.Equal(got, want) {
				t.Errorf("%d-byte key: last round key lane %d = %x, want %x", len(key), lane/16, got, want)
			}
		}
		if !bytes.Equal(rk[0][:16], key[:16]) {
			t.Errorf("%d-byte key: round key 0 is not the key", len(key))
		}
	}
}

// gcmAsmTiers lists the assembly tiers this CPU runs.
func gcmAsmTiers() []Tier {
	var ts []Tier
	for _, t := range []Tier{AVX2, AVX512} {
		if gcmHas(t) {
			ts = append(ts, t)
		}
	}
	return ts
}

// TestGCMCounterWrap starts the text counter near 2^32 (a state no 96-bit IV reaches within one
// message, but the kernels must still implement inc32: SP 800-38D section 6.2 increments only the
// low 32 bits, modulo 2^32) and compares the kernels with the Generic tier's gcmCTR (a Go uint32
// counter) and gcmTag, for lengths that put the wrap in every lane and chunk position.
func TestGCMCounterWrap(t *testing.T) {
	tiers := gcmAsmTiers()
	if len(tiers) == 0 {
		t.Skip("no assembly tier on this CPU")
	}
	for _, size := range []int{16, 24, 32} {
		raw := make([]byte, size)
		for i := range raw {
			raw[i] = byte(7*i + size)
		}
		key, err := NewKey(map[int]Suite{16: AES128GCM, 24: AES192GCM, 32: AES256GCM}[size], raw)
		if err != nil {
			t.Fatal(err)
		}
		g := key.gcm
		nonce := []byte("wrap nonce!!")
		ad := []byte("header")
		for _, n := range []int{1, 16, 17, 64, 100, 255, 256, 300, 511, 512, 700, 1100} {
			for back := uint32(1); back <= 20; back += 3 {
				start := -back // the counter wraps after back blocks
				src := make([]byte, n)
				for i := range src {
					src[i] = byte(i * 13)
				}

				sc := getGCMScratch()
				copy(sc.j0[:12], nonce)
				binary.BigEndian.PutUint32(sc.j0[12:], 1)
				g.block.Encrypt(sc.tagMask[:], sc.j0[:])
				want := make([]byte, n+TagSize)
				gcmCTR(g, sc, want[:n], src, start)
				gcmTag(g, sc, ad, want[:n], want[n:])
				putGCMScratch(sc)

				for _, tier := range gcmKernelVariants(tiers) {
					got := make([]byte, n+TagSize)
					var b gcmBatch
					b.tier = tier.tier
					impl.gcmVAES = tier.vaes
					op := Op{Key: key, Nonce: nonce, AD: ad, Src: src, Dst: got}
					d := &b.descs[0]
					gcmStart(d, &op, n)
					d.ctr[0] = d.ctr[0]&^0xffffffff | uint64(start)
					d.ad, d.adLen = &ad[0], len(ad)
					d.src, d.dst, d.n = &src[0], &got[0], n
					d.tag = &got[n]
					b.count = 1
					b.flush([]Op{op})
					impl.gcmVAES = vaesDefault
					if !bytes.Equal(got, want) {
						t.Fatalf("%v AES-%d, %d bytes, counter starting 2^32-%d: got %x, want %x",
							tier, 8*size, n, back, got, want)
					}
				}
			}
		}
	}
}

var vaesDefault = impl.gcmVAES

// gcmKernelVariant is a tier and, for AVX2, which of its kernels runs.
type gcmKernelVariant struct {
	tier Tier
	vaes bool
}

func (v gcmKernelVariant) String() string {
	if v.tier == AVX2 && v.vaes {
		return "AVX2 (VAES)"
	}
	return v.tier.String()
}

// gcmKernelVariants lists the per-packet kernels of tiers: AVX2 twice when this CPU has VAES.
func gcmKernelVariants(tiers []Tier) []gcmKernelVariant {
	var vs []gcmKernelVariant
	for _, t := range tiers {
		vs = append(vs, gcmKernelVariant{tier: t})
		if t == AVX2 && vaesDefault {
			vs = append(vs, gcmKernelVariant{tier: t, vaes: true})
		}
	}
	return vs
}

// TestGCMKeyDestroy checks that Destroy wipes the round keys and powers of H.
func TestGCMKeyDestroy(t *testing.T) {
	if !gcmAVX2OK {
		t.Skip("no AES-NI: the key table is not built")
	}
	k, err := NewKey(AES256GCM, bytes.Repeat([]byte{0x42}, 32))
	if err != nil {
		t.Fatal(err)
	}
	g := k.gcm
	if bytes.Count(g.asm.mem[:], []byte{0}) == len(g.asm.mem) {
		t.Fatal("key table empty before Destroy")
	}
	k.Destroy()
	if bytes.Count(g.asm.mem[:], []byte{0}) != len(g.asm.mem) || g.asm.tab != nil {
		t.Fatal("Destroy left key material in the table")
	}
}

// TestGCMKernelLengths runs every per-packet kernel this CPU has (AVX512 with either GHASH of its
// chunk loop, the AVX2 tier's VAES ymm kernel and the AES-NI xmm one older CPUs run) against
// crypto/cipher on every length 0..1100 and the chunk boundaries around 4 KiB (where a counter's
// low byte wraps), 16 KiB (a kernel call) and beyond, with AD of every tail length and, every
// seventh length, AD past the 256-byte chunks, sealing and opening. Lengths of whole chunks end the
// AVX512 kernel's lanes without a tail.
func TestGCMKernelLengths(t *testing.T) {
	if !gcmAVX2OK {
		t.Skip("no assembly tier on this CPU")
	}
	type variant struct {
		tier             Tier
		vaes, schoolbook bool
	}
	variants := []variant{{AVX2, false, false}}
	if impl.gcmVAES {
		variants = append(variants, variant{AVX2, true, false})
	}
	if gcmAVX512OK {
		variants = append(variants, variant{AVX512, impl.gcmVAES, false}, variant{AVX512, impl.gcmVAES, true})
	}
	defer func(v, s bool) { impl.gcmVAES, impl.gcmSchoolbook = v, s }(impl.gcmVAES, impl.gcmSchoolbook)
	lengths := []int{1419, 1420, 1421, 4095, 4096, 4097, 16383, 16384, 16385, 40000}
	for n := range 1101 {
		lengths = append(lengths, n)
	}
	for _, size := range []int{16, 24, 32} {
		key, oracle := gcmTestKey(t, size)
		for _, v := range variants {
			impl.gcmVAES, impl.gcmSchoolbook = v.vaes, v.schoolbook
			for i, n := range lengths {
				nonce := bytes.Repeat([]byte{byte(i)}, 12)
				adLen := i % 35
				if i%7 == 0 {
					adLen = 256 + i%300
				}
				ad := bytes.Repeat([]byte{0xad}, adLen)
				pt := make([]byte, n)
				for j := range pt {
					pt[j] = byte(j * (i + 1))
				}
				want := oracle.Seal(nil, nonce, pt, ad)
				ops := []Op{{Key: key, Nonce: nonce, AD: ad, Src: pt, Dst: make([]byte, n+TagSize)}}
				gcmRunTier(v.tier, ops, false)
				if !bytes.Equal(ops[0].Dst, want) {
					t.Fatalf("%s (VAES %v, schoolbook %v) AES-%d Seal of %d bytes, AD %d, differs from crypto/cipher",
						v.tier, v.vaes, v.schoolbook, 8*size, n, adLen)
				}
				ops[0] = Op{Key: key, Nonce: nonce, AD: ad, Src: want, Dst: make([]byte, n)}
				if gcmRunTier(v.tier, ops, true) != 0 || !bytes.Equal(ops[0].Dst, pt) {
					t.Fatalf("%s (VAES %v, schoolbook %v) AES-%d Open of %d bytes, AD %d, failed",
						v.tier, v.vaes, v.schoolbook, 8*size, n, adLen)
				}
			}
		}
	}
}

// BenchmarkGCMKernel times the assembly alone on prepared descriptors (8 per call, as gcmRunTier
// issues them), against the whole driver: the difference is the Go side's share per op, which is
// what the choice of lane layout could not reduce (see gcm_amd64.go). The small ops also run with
// four keys in turn (-4keys), which the lane kernels take with a table per packet.
func BenchmarkGCMKernel(b *testing.B) {
	keys := make([]*Key, 4)
	for i := range keys {
		raw := make([]byte, 16)
		raw[0] = byte(i)
		k, err := NewKey(AES128GCM, raw)
		if err != nil {
			b.Fatal(err)
		}
		keys[i] = k
	}
	kernels := []struct {
		name string
		ok   bool
		f    func(*gcmDesc, int)
	}{
		{"AVX512", gcmAVX512OK, gcmSealAVX512},
		{"AVX512lanes", gcmAVX512OK, func(d *gcmDesc, count int) { gcmSealLanesAVX512(d, count/gcmLaneGroup) }},
		{"AVX2VAES", impl.gcmVAES, gcmSealAVX2VAES},
		{"AVX2", gcmAVX2OK, gcmSealAVX2},
	}
	newOps := func(n, nk int) []Op {
		ops := make([]Op, 64)
		for i := range ops {
			ops[i] = Op{Key: keys[i%nk], Nonce: make([]byte, 12), Src: make([]byte, n), Dst: make([]byte, n+TagSize)}
		}
		return ops
	}
	for _, n := range []int{64, 1420} {
		for _, nk := range []int{1, 4} {
			if nk > 1 && n > gcmLaneText {
				continue
			}
			ops, suffix := newOps(n, nk), ""
			if nk > 1 {
				suffix = fmt.Sprintf("-%dkeys", nk)
			}
			for _, k := range kernels {
				if !k.ok || k.name == "AVX512lanes" && n > gcmLaneText {
					continue
				}
				b.Run(fmt.Sprintf("%d/%s/kernel%s", n, k.name, suffix), func(b *testing.B) {
					var batch gcmBatch
					for i := range gcmDescMax {
						d, op := &batch.descs[i], &ops[i]
						gcmStart(d, op, n)
						d.src, d.dst, d.n, d.tag = &op.Src[0], &op.Dst[0], n, &op.Dst[n]
						d.nonce = &op.Nonce[0] // the lane kernels' J0
					}
					b.SetBytes(int64(n * gcmDescMax))
					for b.Loop() {
						k.f(&batch.descs[0], gcmDescMax)
					}
					b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*gcmDescMax), "ns/pkt")
				})
			}
			for _, t := range gcmAsmTiers() {
				b.Run(fmt.Sprintf("%d/%s/gcmRunTier%s", n, t, suffix), func(b *testing.B) {
					b.SetBytes(int64(n * len(ops)))
					for b.Loop() {
						gcmRunTier(t, ops, false)
					}
					b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(ops)), "ns/pkt")
				})
			}
		}
	}
}

// TestAESBlocksVariants runs the AES-ECB kernels this CPU has, whichever EncryptBlocks picks, against
// crypto/aes for every key size and 0..72 blocks: every remainder after the passes of eight,
// sixteen, 32 and four blocks.
func TestAESBlocksVariants(t *testing.T) {
	if !gcmAVX2OK {
		t.Skip("no AES-NI")
	}
	variants := map[string]func(*gcmTable, *[16]byte, *[16]byte, int){"AES-NI": aesEncryptBlocks}
	if impl.gcmVAES {
		variants["VAES"] = aesEncryptBlocksVAES
	}
	if gcmAVX512OK {
		variants["AVX512"] = aesEncryptBlocksAVX512
	}
	for _, size := range []int{16, 24, 32} {
		raw := bytes.Repeat([]byte{byte(size)}, size)
		key, _ := NewKey(map[int]Suite{16: AES128GCM, 24: AES192GCM, 32: AES256GCM}[size], raw)
		block, _ := aes.NewCipher(raw)
		for n := 0; n <= 72; n++ {
			src, dst := make([][16]byte, n+1), make([][16]byte, n+1)
			for i := range src {
				src[i] = [16]byte{byte(i), byte(n), byte(size)}
			}
			for name, ecb := range variants {
				dst[n] = [16]byte{0xee}
				ecb(key.gcm.asm.tab, &dst[0], &src[0], n)
				for i := range n {
					var want [16]byte
					block.Encrypt(want[:], src[i][:])
					if dst[i] != want {
						t.Fatalf("%s AES-%d, %d blocks: block %d = %x, want %x", name, 8*size, n, i, dst[i], want)
					}
				}
				if dst[n] != [16]byte{0xee} {
					t.Fatalf("%s AES-%d, %d blocks: wrote past the last block", name, 8*size, n)
				}
			}
		}
	}
}

// BenchmarkGCMAVX2Variants times both AVX2 kernels (AES-NI xmm, and VAES ymm where the CPU has it)
// through the AVX2 tier against crypto/cipher, alternating (benchshape.PairedForced), by key size
// and message length, batches of 8 with 13 bytes of AD: the figures behind impl.gcmVAES and behind
// the AES-GCM route of CPUs of the AVX2 class without VAES, which any AVX2 CPU can measure.
func BenchmarkGCMAVX2Variants(b *testing.B) {
	if !gcmAVX2OK {
		b.Skip("no AVX2 tier on this CPU")
	}
	type variant struct {
		name string
		vaes bool
	}
	variants := []variant{{"AESNI", false}}
	if impl.gcmVAES {
		variants = append(variants, variant{"VAES", true})
	}
	defer func(v bool) { impl.gcmVAES = v }(impl.gcmVAES)
	for _, size := range []int{16, 24, 32} {
		key, std := gcmTestKey(b, size)
		for _, n := range []int{64, 512, 1420, 4096, 16384} {
			seal, open := make([]Op, 8), make([]Op, 8)
			for i := range seal {
				nonce, ad := bytes.Repeat([]byte{byte(i)}, 12), make([]byte, 13)
				ct := make([]byte, n+TagSize)
				seal[i] = Op{Key: key, Nonce: nonce, AD: ad, Src: make([]byte, n), Dst: ct}
				open[i] = Op{Key: key, Nonce: nonce, AD: ad, Src: ct, Dst: make([]byte, n)}
			}
			Generic.Seal(seal)
			for _, v := range variants {
				for _, opening := range []bool{false, true} {
					ops, dir := seal, "seal"
					if opening {
						ops, dir = open, "open"
					}
					b.Run(fmt.Sprintf("%s/%v/%d/%s", v.name, key.Suite(), n, dir), func(b *testing.B) {
						impl.gcmVAES = v.vaes
						ours := func() {
							if gcmRunTier(AVX2, ops, opening) != 0 {
								b.Fatal("Open failed")
							}
						}
						base := func() {
							for i := range ops {
								op := &ops[i]
								if !opening {
									std.Seal(op.Dst[:0], op.Nonce, op.Src, op.AD)
								} else if _, err := std.Open(op.Dst[:0], op.Nonce, op.Src, op.AD); err != nil {
									b.Fatal(err)
								}
							}
						}
						benchshape.PairedForced(b, len(ops), ours, base)
					})
				}
			}
		}
	}
}

// gcmTestKey returns an AES-GCM key of size bytes and crypto/cipher's GCM under it, for the
// per-kernel tests and benchmarks (TestGCMKernelLengths, BenchmarkGCMAVX2Variants).
func gcmTestKey(tb testing.TB, size int) (*Key, cipher.AEAD) {
	tb.Helper()
	raw := bytes.Repeat([]byte{byte(size)}, size)
	key, err := NewKey(map[int]Suite{16: AES128GCM, 24: AES192GCM, 32: AES256GCM}[size], raw)
	if err != nil {
		tb.Fatal(err)
	}
	blk, _ := aes.NewCipher(raw)
	std, _ := cipher.NewGCM(blk)
	return key, std
}
