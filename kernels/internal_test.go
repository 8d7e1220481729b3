// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package kernels

// Tests of the Generic tier's building blocks (ChaCha20 block function, HChaCha20, Poly1305, GHASH)
// with the published vectors of their specifications or a bitwise reference, cross-checked against
// golang.org/x/crypto, and of key wiping. These reach unexported code, hence the internal package;
// everything else is in kernels_test.

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"golang.org/x/crypto/chacha20"
	xpoly1305 "golang.org/x/crypto/poly1305"
)

func refHex(s string) []byte {
	b, err := hex.DecodeString(strings.Join(strings.Fields(s), ""))
	if err != nil {
		panic(err)
	}
	return b
}

func refKeyWords(key []byte) *[8]uint32 {
	var w [8]uint32
	for i := range w {
		w[i] = binary.LittleEndian.Uint32(key[4*i:])
	}
	return &w
}

func refNonceWords(nonce []byte) *[3]uint32 {
	return &[3]uint32{binary.LittleEndian.Uint32(nonce[0:]), binary.LittleEndian.Uint32(nonce[4:]), binary.LittleEndian.Uint32(nonce[8:])}
}

// refXOR is x/crypto's ChaCha20 key stream from block counter over src.
func refXOR(t *testing.T, key, nonce []byte, counter uint32, src []byte) []byte {
	c, err := chacha20.NewUnauthenticatedCipher(key, nonce)
	if err != nil {
		t.Fatal(err)
	}
	c.SetCounter(counter)
	dst := make([]byte, len(src))
	c.XORKeyStream(dst, src)
	return dst
}

var key00to1f = refHex("000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f")

func TestRefChaCha20Block(t *testing.T) {
	for _, v := range []struct {
		source  string
		key     []byte
		nonce   string
		counter uint32
		want    string // serialized block (or its first bytes)
	}{
		{
			source: "RFC 8439 section 2.3.2", key: key00to1f, nonce: "000000090000004a00000000", counter: 1,
			want: `10f1e7e4d13b5915500fdd1fa32071c4c7d1f4c733c068030422aa9ac3d46c4e
			       d2826446079faa0914c2d705d98b02a2b5129cd1de164eb9cbd083e8a2503c4e`,
		},
		{
			// Poly1305 key generation: the first 32 bytes of block 0.
			source: "RFC 8439 section 2.6.2", key: refHex("808182838485868788898a8b8c8d8e8f909192939495969798999a9b9c9d9e9f"),
			nonce: "000000000001020304050607", counter: 0,
			want: "8ad5a08b905f81cc815040274ab29471a833b637e3fd0da508dbb8e2fdd1a646",
		},
	} {
		var out [64]byte
		chachaBlock(&out, refKeyWords(v.key), v.counter, refNonceWords(refHex(v.nonce)))
		want := refHex(v.want)
		if !bytes.Equal(out[:len(want)], want) {
			t.Errorf("%s: block = %x, want %x", v.source, out[:len(want)], want)
		}
		if oracle := refXOR(t, v.key, refHex(v.nonce), v.counter, make([]byte, 64)); !bytes.Equal(out[:], oracle) {
			t.Errorf("%s: block differs from x/crypto/chacha20", v.source)
		}
	}
}

func TestRefChaCha20Encryption(t *testing.T) {
	// RFC 8439 section 2.4.2: the sunscreen text under key 00..1f, nonce 00..4a..00, counter 1.
	pt := []byte("Ladies and Gentlemen of the class of '99: If I could offer you only one tip for the future, sunscreen would be it.")
	want := refHex(`6e2e359a2568f98041ba0728dd0d6981e97e7aec1d4360c20a27afccfd9fae0b
		f91b65c5524733ab8f593dabcd62b3571639d624e65152ab8f530c359f0861d8
		07ca0dbf500d6a6156a38e088a22b65e52bc514d16ccf806818ce91ab7793736
		5af90bbf74a35be6b40b8eedf2785e42874d`)
	nonce := refHex("000000000000004a00000000")
	got := make([]byte, len(pt))
	chachaXOR(got, pt, refKeyWords(key00to1f), refNonceWords(nonce), 1)
	if !bytes.Equal(got, want) {
		t.Errorf("RFC 8439 2.4.2: ciphertext = %x, want %x", got, want)
	}
	if oracle := refXOR(t, key00to1f, nonce, 1, pt); !bytes.Equal(oracle, want) {
		t.Errorf("RFC 8439 2.4.2: table disagrees with x/crypto/chacha20")
	}

	// Every length up to a few blocks (partial final blocks of every size), from a counter other
	// than the AEAD's 1, against x/crypto.
	r := rand.New(rand.NewPCG(1, 2))
	key, nonce2 := make([]byte, 32), make([]byte, 12)
	for n := range 300 {
		for i := range key {
			key[i] = byte(r.Uint32())
		}
		src := make([]byte, n)
		for i := range src {
			src[i] = byte(r.Uint32())
		}
		got := make([]byte, n)
		chachaXOR(got, src, refKeyWords(key), refNonceWords(nonce2), 7)
		if want := refXOR(t, key, nonce2, 7, src); !bytes.Equal(got, want) {
			t.Fatalf("chachaXOR of %d bytes differs from x/crypto/chacha20", n)
		}
	}
}

// hchachaDraftNonce and hchachaDraftSubkey are the HChaCha20 test vector of
// draft-irtf-cfrg-xchacha-03 section 2.2.1, under key00to1f.
var (
	hchachaDraftNonce  = refHex("000000090000004a0000000031415927")
	hchachaDraftSubkey = refHex("82413b4227b27bfed30e42508a877d73a0f9e4d58a74a853c12ec41326d3ecdc")
)

// checkHChaChaDraft checks an HChaCha20 function (name) against the draft's test vector.
func checkHChaChaDraft(t *testing.T, name string, hchacha func(out, key *[8]uint32, nonce *[16]byte)) {
	t.Helper()
	var out [8]uint32
	hchacha(&out, refKeyWords(key00to1f), (*[16]byte)(hchachaDraftNonce))
	got := make([]byte, 32)
	for i, w := range out {
		binary.LittleEndian.PutUint32(got[4*i:], w)
	}
	if !bytes.Equal(got, hchachaDraftSubkey) {
		t.Errorf("%s = %x, want %x", name, got, hchachaDraftSubkey)
	}
}

func TestRefHChaCha20(t *testing.T) {
	checkHChaChaDraft(t, "hchacha20", func(out, key *[8]uint32, nonce *[16]byte) { hchacha20(out, key, nonce[:]) })
	if oracle, err := chacha20.HChaCha20(key00to1f, hchachaDraftNonce); err != nil || !bytes.Equal(oracle, hchachaDraftSubkey) {
		t.Errorf("HChaCha20 table disagrees with x/crypto/chacha20: %x, %v", oracle, err)
	}

	r := rand.New(rand.NewPCG(5, 6))
	key, nonce, got := make([]byte, 32), make([]byte, 16), make([]byte, 32)
	var out [8]uint32
	for range 200 {
		for i := range key {
			key[i] = byte(r.Uint32())
		}
		for i := range nonce {
			nonce[i] = byte(r.Uint32())
		}
		hchacha20(&out, refKeyWords(key), nonce)
		for i, w := range out {
			binary.LittleEndian.PutUint32(got[4*i:], w)
		}
		if oracle, _ := chacha20.HChaCha20(key, nonce); !bytes.Equal(got, oracle) {
			t.Fatalf("HChaCha20(%x, %x) = %x, x/crypto says %x", key, nonce, got, oracle)
		}
	}
}

// refPoly1305 runs the Generic Poly1305 over msg, a multiple of 16 bytes: the only shape the AEAD
// construction feeds it (RFC 8439 section 2.8 pads every part to 16 bytes).
func refPoly1305(key, msg []byte) []byte {
	var p poly1305
	p.init(key)
	p.blocks(msg)
	out := make([]byte, 16)
	p.sum(out)
	return out
}

func TestRefPoly1305(t *testing.T) {
	// RFC 8439 appendix A.3, the test vectors whose messages are whole 16-byte blocks; #5 to #11
	// exercise the final reduction and carries (h just above p, h+s overflowing 2^128, ...). The
	// section 2.5.2 example (34 bytes) and A.3 #2 to #4 (375 bytes) end in a partial block, which
	// this Poly1305 never sees: the AEAD pads every input to 16 bytes (section 2.8), so blocks always
	// carry the 2^128 bit. The padded case is covered by the AEAD vectors.
	for _, v := range []struct{ name, key, msg, tag string }{
		{"A.3 #1", strings.Repeat("00", 32), strings.Repeat("00", 64), "00000000000000000000000000000000"},
		{"A.3 #5", "02" + strings.Repeat("00", 31), strings.Repeat("ff", 16), "03000000000000000000000000000000"},
		{"A.3 #6", "02" + strings.Repeat("00", 15) + strings.Repeat("ff", 16), "02" + strings.Repeat("00", 15), "03000000000000000000000000000000"},
		{"A.3 #7", "01" + strings.Repeat("00", 31),
			"ffffffffffffffffffffffffffffffff f0ffffffffffffffffffffffffffffff 11000000000000000000000000000000",
			"05000000000000000000000000000000"},
		{"A.3 #8", "01" + strings.Repeat("00", 31),
			"ffffffffffffffffffffffffffffffff fbfefefefefefefefefefefefefefefe 01010101010101010101010101010101",
			"00000000000000000000000000000000"},
		{"A.3 #9", "02" + strings.Repeat("00", 31), "fdffffffffffffffffffffffffffffff", "faffffffffffffffffffffffffffffff"},
		{"A.3 #10", "0100000000000000040000000000000000000000000000000000000000000000",
			"e33594d7505e43b900000000000000003394d7505e4379cd01000000000000000000000000000000000000000000000001000000000000000000000000000000",
			"14000000000000005500000000000000"},
		{"A.3 #11", "0100000000000000040000000000000000000000000000000000000000000000",
			"e33594d7505e43b900000000000000003394d7505e4379cd010000000000000000000000000000000000000000000000",
			"13000000000000000000000000000000"},
	} {
		key, msg, want := refHex(v.key), refHex(v.msg), refHex(v.tag)
		if got := refPoly1305(key, msg); !bytes.Equal(got, want) {
			t.Errorf("RFC 8439 %s: tag = %x, want %x", v.name, got, want)
		}
		var oracle [16]byte
		xpoly1305.Sum(&oracle, msg, (*[32]byte)(key))
		if !bytes.Equal(oracle[:], want) {
			t.Errorf("RFC 8439 %s: table disagrees with x/crypto/poly1305 (%x)", v.name, oracle)
		}
	}

	// Random and extreme keys and messages against x/crypto: all-ones blocks keep the accumulator
	// near its limb bounds, where a missed carry would show.
	r := rand.New(rand.NewPCG(3, 4))
	for i := range 2000 {
		key := make([]byte, 32)
		msg := make([]byte, 16*r.IntN(24))
		for j := range key {
			key[j] = byte(r.Uint32())
		}
		for j := range msg {
			msg[j] = byte(r.Uint32())
		}
		switch i % 4 {
		case 1:
			for j := range msg {
				msg[j] = 0xff
			}
		case 2:
			for j := range key {
				key[j] = 0xff
			}
		case 3:
			for j := range key {
				key[j] = 0xff
			}
			for j := range msg {
				msg[j] = 0xff
			}
		}
		var want [16]byte
		xpoly1305.Sum(&want, msg, (*[32]byte)(key))
		if got := refPoly1305(key, msg); !bytes.Equal(got, want[:]) {
			t.Fatalf("Poly1305(key %x, %d bytes) = %x, x/crypto says %x", key, len(msg), got, want)
		}
	}
}

// TestRefGHASH checks the portable GHASH, whose update absorbs ghashAggregate blocks with one
// reduction, against SP 800-38D's Algorithm 1 one bit at a time: random H, a random starting
// accumulator, every whole-block length from 0 to 13 blocks (the groups and the single blocks after
// them), and H^2 to H^ghashAggregate as the key holds them.
func TestRefGHASH(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	random := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		return b
	}
	for range 50 {
		h, y0 := random(16), random(16)
		k := newGHASHKey(h)
		want := refGHASHMul(h, h)
		for i := 1; i < ghashAggregate; i++ {
			var got [16]byte
			k.pow[i].e.store(got[:])
			if !bytes.Equal(got[:], want) {
				t.Fatalf("H^%d = %x, want %x", i+1, got, want)
			}
			want = refGHASHMul(want, h)
		}
		for blocks := range 14 {
			data := random(16 * blocks)
			want := append([]byte(nil), y0...)
			for b := range blocks {
				for j := range 16 {
					want[j] ^= data[16*b+j]
				}
				want = refGHASHMul(want, h)
			}
			y := loadGHASHElem(y0)
			k.update(&y, data)
			var got [16]byte
			y.store(got[:])
			if !bytes.Equal(got[:], want) {
				t.Fatalf("GHASH of %d blocks = %x, want %x", blocks, got, want)
			}
		}
	}
}

// refGHASHMul is SP 800-38D section 6.3's Algorithm 1: the product of two blocks in GF(2^128), bit
// by bit (bit 0 the most significant bit of byte 0).
func refGHASHMul(x, y []byte) []byte {
	z := make([]byte, 16)
	v := append([]byte(nil), y...)
	for i := range 128 {
		if x[i/8]>>(7-i%8)&1 == 1 {
			for j := range z {
				z[j] ^= v[j]
			}
		}
		lsb := v[15] & 1
		for j := 15; j > 0; j-- {
			v[j] = v[j]>>1 | v[j-1]<<7
		}
		v[0] >>= 1
		if lsb == 1 {
			v[0] ^= 0xe1
		}
	}
	return z
}

// TestRefKeyDestroyWipes checks that Destroy leaves no key material in the Key (the ChaCha20 key
// words) or in the AES-GCM material it held (DESIGN.md: key material wiped when a keypair retires).
func TestRefKeyDestroyWipes(t *testing.T) {
	raw := bytes.Repeat([]byte{0x5c}, 32)
	for _, s := range []Suite{ChaCha20Poly1305, XChaCha20Poly1305, AES128GCM, AES192GCM, AES256GCM} {
		k, err := NewKey(s, raw[:s.KeySize()])
		if err != nil {
			t.Fatal(err)
		}
		g := k.gcm
		if s.isChaCha() == (k.chacha == [8]uint32{}) || s.isGCM() == (g == nil) {
			t.Fatalf("%v: key material not where this test expects it", s)
		}
		k.Destroy()
		if k.chacha != [8]uint32{} || k.gcm != nil {
			t.Errorf("%v: Destroy left key material in the Key", s)
		}
		if g != nil && !reflect.ValueOf(g).Elem().IsZero() {
			t.Errorf("%v: Destroy left the AES-GCM key material (round keys, GHASH key) unwiped", s)
		}
		k.Destroy() // twice is harmless
	}
}
