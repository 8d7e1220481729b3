// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package quic

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"golang.org/x/crypto/chacha20"
	"golang.org/x/crypto/chacha20poly1305"
)

// oracle protects one packet the way a QUIC stack does today, from crypto/aes, crypto/cipher and
// x/crypto: the per-packet reference of the differential test and the benchmarks' baseline.
type oracle struct {
	aead  cipher.AEAD
	hp    cipher.Block // AES suites
	hpKey []byte       // ChaCha20
	iv    [12]byte
	// Per-packet scratch kept in the oracle, as a stack keeps it in its connection: a local
	// buffer handed to these interfaces would be allocated per packet.
	n [12]byte
	m [16]byte
}

func newOracle(t testing.TB, k *Keys) *oracle {
	t.Helper()
	p, _ := versionParams(k.version)
	_, keyLen, h, _ := k.suite.aead()
	key := expandLabel(h, k.secret, p.key, keyLen)
	o := &oracle{iv: k.iv, hpKey: append([]byte(nil), k.hpRaw...)}
	var err error
	if k.suite == ChaCha20Poly1305 {
		o.aead, err = chacha20poly1305.New(key)
	} else {
		var b cipher.Block
		if b, err = aes.NewCipher(key); err == nil {
			o.aead, err = cipher.NewGCM(b)
		}
		o.hp, _ = aes.NewCipher(k.hpRaw)
	}
	if err != nil {
		t.Fatal(err)
	}
	return o
}

func (o *oracle) mask(sample []byte) *[16]byte {
	if o.hp != nil {
		o.hp.Encrypt(o.m[:], sample)
		return &o.m
	}
	c, _ := chacha20.NewUnauthenticatedCipher(o.hpKey, sample[4:16])
	c.SetCounter(binary.LittleEndian.Uint32(sample))
	o.m = [16]byte{}
	c.XORKeyStream(o.m[:5], o.m[:5])
	return &o.m
}

func (o *oracle) nonce(pn uint64) []byte {
	o.n = o.iv
	binary.BigEndian.PutUint64(o.n[4:], binary.BigEndian.Uint64(o.n[4:])^pn)
	return o.n[:]
}

// seal protects buf (unprotected header through the packet number, then plaintext) in place.
func (o *oracle) seal(buf []byte, pnOff int, pn uint64) []byte {
	pnLen := int(buf[0]&3) + 1
	for j := range pnLen {
		buf[pnOff+j] = byte(pn >> (8 * (pnLen - 1 - j)))
	}
	hdr := pnOff + pnLen
	out := o.aead.Seal(buf[hdr:hdr], o.nonce(pn), buf[hdr:], buf[:hdr])
	buf = buf[:hdr+len(out)]
	m := o.mask(buf[pnOff+4 : pnOff+20])
	bits := byte(0x1f)
	if buf[0]&0x80 != 0 {
		bits = 0x0f
	}
	buf[0] ^= m[0] & bits
	for j := range pnLen {
		buf[pnOff+j] ^= m[1+j]
	}
	return buf
}

var allVersions = []Version{Version1, Version2}
var allSuites = []Suite{AES128GCM, AES256GCM, ChaCha20Poly1305}

// randomKeys returns keys of every version and suite from random secrets.
func randomKeys(t testing.TB, rng *rand.Rand) []*Keys {
	var ks []*Keys
	for _, v := range allVersions {
		for _, s := range allSuites {
			secret := make([]byte, 48)
			for i := range secret {
				secret[i] = byte(rng.Uint32())
			}
			k, err := NewKeys(v, s, secret)
			if err != nil {
				t.Fatal(err)
			}
			ks = append(ks, k)
		}
	}
	return ks
}

// randomPacket returns an unprotected packet: a long header (Initial-like, with connection IDs and
// a length field the package ignores) or a short one, packet-number length 1-4, a payload of up to
// maxPayload bytes (at least what the sample needs), with room for the tag.
func randomPacket(rng *rand.Rand, maxPayload int) (buf []byte, pnOff int, pn uint64) {
	pnLen := 1 + rng.IntN(4)
	var hdr []byte
	if rng.IntN(2) == 0 {
		hdr = append(hdr, 0xc0|byte(rng.IntN(16))&0x0c|byte(pnLen-1), 0, 0, 0, 1)
		dcid := 1 + rng.IntN(20)
		hdr = append(hdr, byte(dcid))
		for range dcid {
			hdr = append(hdr, byte(rng.Uint32()))
		}
		hdr = append(hdr, 0, 0x44, 0x9e) // empty SCID, a length
	} else {
		hdr = append(hdr, 0x40|byte(rng.IntN(8))<<2|byte(pnLen-1)) // spin, reserved, key phase
		for range rng.IntN(21) {
			hdr = append(hdr, byte(rng.Uint32()))
		}
	}
	pnOff = len(hdr)
	pn = rng.Uint64N(maxPN)
	n := max(4-pnLen, rng.IntN(maxPayload+1))
	buf = make([]byte, pnOff+pnLen+n, pnOff+pnLen+n+16)
	copy(buf, hdr)
	for i := pnOff + pnLen; i < len(buf); i++ {
		buf[i] = byte(rng.Uint32())
	}
	return buf, pnOff, pn
}

// TestDifferential: random batches of every version, suite, header form and packet-number length,
// payloads of 0-1400 bytes, sealed by the package and by the per-packet oracle, must be byte for
// byte equal; Open of the package's output, against a largest just below each packet's number,
// must decode the number and give back what seals to the same packet.
func TestDifferential(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 18))
	for _, k := range randomKeys(t, rng) {
		o := newOracle(t, k)
		for _, n := range []int{1, 2, 7, 16, 17, 64, 65, 130} {
			pkts := make([]Packet, n)
			want := make([][]byte, n)
			for i := range pkts {
				buf, off, pn := randomPacket(rng, 1400)
				want[i] = o.seal(append(make([]byte, 0, cap(buf)), buf...), off, pn)
				pkts[i] = Packet{Buf: buf, PNOffset: off, PN: pn}
			}
			k.Seal(pkts)
			for i := range pkts {
				if !bytes.Equal(pkts[i].Buf, want[i]) {
					t.Fatalf("%v %v batch of %d: packet %d differs from the per-packet oracle", k.version, k.suite, n, i)
				}
			}
			for i := range pkts {
				p := pkts[i]
				one := []Packet{{Buf: append([]byte(nil), p.Buf...), PNOffset: p.PNOffset}}
				if k.Open(one, int64(p.PN)-1) != 0 || one[0].Err != nil {
					t.Fatalf("%v %v: Open of packet %d failed", k.version, k.suite, i)
				}
				if one[0].PN != p.PN {
					t.Fatalf("%v %v: packet %d decoded to number %d, want %d", k.version, k.suite, i, one[0].PN, p.PN)
				}
				again := []Packet{{Buf: append(make([]byte, 0, len(one[0].Buf)+16), one[0].Buf...), PNOffset: p.PNOffset, PN: p.PN}}
				k.Seal(again)
				if !bytes.Equal(again[0].Buf, p.Buf) {
					t.Fatalf("%v %v: packet %d: Open's output does not seal back to the packet", k.version, k.suite, i)
				}
			}
		}
	}
}

// TestOpenBatch: one Open call over a whole sealed batch of consecutive packet numbers, with some
// packets forged, truncated or too short, sets each packet's verdict, decodes every number against
// the one largest, and leaves no plaintext of a failed packet.
func TestOpenBatch(t *testing.T) {
	rng := rand.New(rand.NewPCG(19, 20))
	for _, k := range randomKeys(t, rng) {
		const n = 100
		base := uint64(1 << 40)
		pkts := make([]Packet, n)
		plain := make([][]byte, n)
		for i := range pkts {
			buf, off, _ := randomPacket(rng, 300)
			buf[0] = buf[0]&^3 | 1 // 2-byte packet numbers: within the window of base
			if len(buf) < off+2+2 {
				buf = append(buf, 0, 0)
			}
			pkts[i] = Packet{Buf: buf, PNOffset: off, PN: base + uint64(i)}
		}
		for i := range pkts {
			plain[i] = append([]byte(nil), pkts[i].Buf...)
		}
		k.Seal(pkts)
		for i := range plain {
			binary.BigEndian.PutUint16(plain[i][pkts[i].PNOffset:], uint16(base+uint64(i)))
		}
		bad := map[int]string{}
		for i := range pkts {
			switch rng.IntN(8) {
			case 0:
				pkts[i].Buf[len(pkts[i].Buf)-1-rng.IntN(len(pkts[i].Buf)-pkts[i].PNOffset-4)] ^= 1 << rng.IntN(8)
				bad[i] = "forged"
			case 1:
				pkts[i].Buf = pkts[i].Buf[:pkts[i].PNOffset+19]
				bad[i] = "too short"
			case 2:
				pkts[i].Buf = pkts[i].Buf[:len(pkts[i].Buf)-1]
				bad[i] = "truncated"
			}
		}
		received := make([][]byte, n)
		for i := range pkts {
			received[i] = append([]byte(nil), pkts[i].Buf...)
		}
		failed := k.Open(pkts, int64(base)-1)
		if failed != len(bad) {
			t.Fatalf("%v %v: Open reported %d failures, want %d", k.version, k.suite, failed, len(bad))
		}
		for i := range pkts {
			p := &pkts[i]
			if why, ok := bad[i]; ok {
				if p.Err != ErrAuth {
					t.Fatalf("%v %v: %s packet %d: Err %v", k.version, k.suite, why, i, p.Err)
				}
				if len(p.Buf) != len(received[i]) {
					t.Fatalf("%s packet %d: length changed", why, i)
				}
				if why != "too short" {
					// The header up to the packet number is as received; from the sample on (past
					// any packet number the forged mask may have claimed) the payload is zero.
					from := p.PNOffset + 4
					if !bytes.Equal(p.Buf[:p.PNOffset+1], received[i][:p.PNOffset+1]) ||
						!bytes.Equal(p.Buf[from:len(p.Buf)-16], make([]byte, len(p.Buf)-16-from)) {
						t.Fatalf("%s packet %d: header not restored or plaintext left", why, i)
					}
				}
				continue
			}
			if p.Err != nil || p.PN != base+uint64(i) || !bytes.Equal(p.Buf, plain[i]) {
				t.Fatalf("%v %v: packet %d: Err %v, PN %d (want %d)", k.version, k.suite, i, p.Err, p.PN, base+uint64(i))
			}
		}
	}
}

// TestDecodePN: RFC 9000 appendix A.3's example and the edges of the window and of the space.
func TestDecodePN(t *testing.T) {
	for _, c := range []struct {
		largest   int64
		truncated uint64
		pnLen     int
		want      uint64
	}{
		{0xa82f30ea, 0x9b32, 2, 0xa82f9b32}, // RFC 9000 appendix A.3
		{-1, 0, 1, 0},
		{-1, 0xff, 1, 0xff},
		{0x17f, 0x00, 1, 0x200},
		{0x17f, 0x7f, 1, 0x17f},
		{0x17f, 0x80, 1, 0x180},
		{0x17f, 0x81, 1, 0x181},
		{0x100, 0x7f, 1, 0x17f},
		{0x100, 0x00, 1, 0x100},
		{0xff, 0x80, 1, 0x180},
		{0xff, 0x7f, 1, 0x17f},
		{maxPN - 2, 0xff, 1, maxPN - 1},
		{maxPN - 2, 0x00, 1, maxPN - 0x100},
		{654360563, 0x00bff4, 3, 654360564}, // RFC 9001 appendix A.5
	} {
		if got := decodePN(c.largest, c.truncated, c.pnLen); got != c.want {
			t.Errorf("decodePN(%#x, %#x, %d) = %#x, want %#x", c.largest, c.truncated, c.pnLen, got, c.want)
		}
	}
	// Exhaustively for one byte: the decoded number carries the truncated bits and is the one of
	// them closest to largest+1 that is not negative.
	for largest := int64(-1); largest < 600; largest++ {
		for tr := range uint64(256) {
			got := int64(decodePN(largest, tr, 1))
			d := got - (largest + 1)
			if uint64(got)&0xff != tr || d > 128 && got >= 256 || d < -128 || d > 256 {
				t.Fatalf("decodePN(%d, %d, 1) = %d", largest, tr, got)
			}
		}
	}
}

// TestOneLargestPerCall: 0x17f then 0x100 against largest 0x100 decode to 0x17f and 0x100: the
// batch does not advance largest.
func TestOneLargestPerCall(t *testing.T) {
	k, _ := NewKeys(Version1, AES128GCM, make([]byte, 32))
	var pkts []Packet
	for _, pn := range []uint64{0x17f, 0x100} {
		buf := make([]byte, 1+1+20, 1+1+20+16)
		buf[0] = 0x40 // short header, 1-byte packet number
		pkts = append(pkts, Packet{Buf: buf, PNOffset: 1, PN: pn})
	}
	k.Seal(pkts)
	if k.Open(pkts, 0x100) != 0 || pkts[0].PN != 0x17f || pkts[1].PN != 0x100 {
		t.Fatalf("decoded %#x and %#x", pkts[0].PN, pkts[1].PN)
	}
}

// TestMisuse: misuse panics before any packet is touched; Open never panics on packets.
func TestMisuse(t *testing.T) {
	k, _ := NewKeys(Version1, AES128GCM, make([]byte, 32))
	dead, _ := NewKeys(Version1, AES128GCM, make([]byte, 32))
	dead.Destroy()
	good := func() Packet { return Packet{Buf: make([]byte, 30, 46), PNOffset: 5, PN: 1} }
	for name, pkts := range map[string][]Packet{
		"short for the sample": {good(), {Buf: make([]byte, 8, 24), PNOffset: 5}},
		"no room for the tag":  {good(), {Buf: make([]byte, 30, 40), PNOffset: 5}},
		"PNOffset 0":           {good(), {Buf: make([]byte, 30, 46), PNOffset: 0}},
		"PN past 2^62":         {good(), {Buf: make([]byte, 30, 46), PNOffset: 5, PN: maxPN}},
	} {
		first := append([]byte(nil), pkts[0].Buf...)
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: Seal did not panic", name)
				}
			}()
			k.Seal(pkts)
		}()
		if !bytes.Equal(pkts[0].Buf, first) {
			t.Errorf("%s: Seal touched a packet before it panicked", name)
		}
	}
	for name, f := range map[string]func(){
		"Seal with destroyed keys": func() { dead.Seal([]Packet{good()}) },
		"Open with destroyed keys": func() { dead.Open([]Packet{good()}, -1) },
		"Seal with nil keys":       func() { (*Keys)(nil).Seal([]Packet{good()}) },
		"Next of destroyed keys":   func() { dead.Next() },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s did not panic", name)
				}
			}()
			f()
		}()
	}
	k.Seal(nil)
	if k.Open(nil, -1) != 0 {
		t.Error("Open(nil) failed")
	}
	for _, p := range []Packet{{}, {Buf: []byte{0xc0}, PNOffset: 1}, {Buf: make([]byte, 40), PNOffset: -3},
		{Buf: make([]byte, 40), PNOffset: 39}, {Buf: make([]byte, 40), PNOffset: 1 << 40}} {
		pkts := []Packet{p}
		if k.Open(pkts, -1) != 1 || pkts[0].Err != ErrAuth {
			t.Errorf("Open of a malformed packet (len %d, PNOffset %d): %v", len(p.Buf), p.PNOffset, pkts[0].Err)
		}
	}
	if _, err := NewKeys(7, AES128GCM, make([]byte, 32)); err == nil {
		t.Error("NewKeys accepted an unknown version")
	}
	if _, err := NewKeys(Version1, 9, make([]byte, 32)); err == nil {
		t.Error("NewKeys accepted an unknown suite")
	}
	if _, err := NewKeys(Version1, AES256GCM, make([]byte, 32)); err == nil {
		t.Error("NewKeys accepted a secret shorter than SHA-384")
	}
}

// TestKeyPhases: the next phase opens what it sealed, not what the old phase sealed, and
// destroying the old phase leaves the new one working (they share the header protection key).
func TestKeyPhases(t *testing.T) {
	for _, v := range allVersions {
		for _, s := range allSuites {
			k, _ := NewKeys(v, s, bytes.Repeat([]byte{7}, 48))
			next, err := k.Next()
			if err != nil {
				t.Fatal(err)
			}
			seal := func(k *Keys) []Packet {
				buf := make([]byte, 40, 56)
				buf[0] = 0x43
				p := []Packet{{Buf: buf, PNOffset: 5, PN: 9}}
				k.Seal(p)
				return p
			}
			old := seal(k)
			k.Destroy()
			if p := seal(next); next.Open(p, 8) != 0 {
				t.Errorf("%v %v: the next phase fails after the old one was destroyed", v, s)
			}
			if next.Open(old, 8) != 1 {
				t.Errorf("%v %v: the next phase opened a packet of the old one", v, s)
			}
		}
	}
}

// TestAllocs: a batch allocates nothing once the scratch pool is warm.
func TestAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	rng := rand.New(rand.NewPCG(21, 22))
	for _, k := range randomKeys(t, rng) {
		pkts := make([]Packet, 70)
		bufs := make([][]byte, len(pkts))
		for i := range pkts {
			bufs[i], pkts[i].PNOffset, _ = randomPacket(rng, 1200)
			bufs[i][0] |= 3 // 4-byte packet numbers, one per i
		}
		reset := func() {
			for i := range pkts {
				pkts[i].Buf, pkts[i].PN = bufs[i][:len(bufs[i])], uint64(i)
			}
		}
		reset()
		for _, n := range []int{len(pkts), 1} { // a batch of one takes the Keys' own scratch
			allocs := testing.AllocsPerRun(20, func() {
				reset()
				k.Seal(pkts[:n])
				k.Open(pkts[:n], -1)
			})
			if allocs != 0 {
				t.Errorf("%v %v: Seal and Open of a batch of %d allocate %v times", k.version, k.suite, n, allocs)
			}
		}
	}
}

func ExampleKeys_Seal() {
	client, _ := NewInitialKeys(Version1, []byte{0x83, 0x94, 0xc8, 0xf0, 0x3e, 0x51, 0x57, 0x08})
	// A GSO batch of short-header packets: header (1 byte, 2-byte packet number), then payload,
	// each with room for its tag.
	var batch []Packet
	for pn := range uint64(3) {
		buf := make([]byte, 0, 1+2+40+16)
		buf = append(buf, 0x41, 0, 0) // form 0, fixed bit, packet-number length 2
		buf = append(buf, bytes.Repeat([]byte{byte(pn)}, 40)...)
		batch = append(batch, Packet{Buf: buf, PNOffset: 1, PN: 100 + pn})
	}
	client.Seal(batch) // every packet protected in one call
	for i := range batch {
		batch[i].PN = 0
	}
	failed := client.Open(batch, 99)
	fmt.Println(failed, batch[2].PN, len(batch[2].Buf))
	// Output: 0 102 43
}

// TestConcurrentUse seals and opens, from several goroutines at once on the same Keys, batches of
// one packet (which take the Keys' own scratch, one goroutine at a time, or else the pool's) and of
// three (the pool's); every packet must match the per-packet oracle both ways. Run with -race.
func TestConcurrentUse(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	for _, k := range randomKeys(t, rng) {
		o := newOracle(t, k)
		const workers, rounds = 4, 40
		type batch struct {
			plain, want [][]byte
			off         []int
			first       uint64
		}
		jobs := make([][]batch, workers)
		for w := range jobs {
			for r := range rounds {
				b := batch{first: rng.Uint64N(maxPN - 8)}
				for j := range 1 + 2*(r%2) {
					buf, off, _ := randomPacket(rng, 200)
					b.plain = append(b.plain, buf)
					b.off = append(b.off, off)
					b.want = append(b.want, o.seal(append(make([]byte, 0, cap(buf)), buf...), off, b.first+uint64(j)))
				}
				jobs[w] = append(jobs[w], b)
			}
		}
		errs := make(chan string, workers)
		var wg sync.WaitGroup
		for _, job := range jobs {
			wg.Go(func() {
				for _, b := range job {
					pkts := make([]Packet, len(b.plain))
					for j := range pkts {
						pkts[j] = Packet{Buf: append(make([]byte, 0, cap(b.plain[j])), b.plain[j]...), PNOffset: b.off[j], PN: b.first + uint64(j)}
					}
					k.Seal(pkts)
					for j := range pkts {
						if !bytes.Equal(pkts[j].Buf, b.want[j]) {
							errs <- fmt.Sprintf("%v %v: Seal of a batch of %d differs from the oracle", k.version, k.suite, len(pkts))
							return
						}
					}
					if k.Open(pkts, int64(b.first)-1) != 0 {
						errs <- fmt.Sprintf("%v %v: Open of a batch of %d failed", k.version, k.suite, len(pkts))
						return
					}
					for j := range pkts {
						if pkts[j].PN != b.first+uint64(j) || !bytes.Equal(pkts[j].Buf[b.off[j]+int(b.plain[j][0]&3)+1:], b.plain[j][b.off[j]+int(b.plain[j][0]&3)+1:]) {
							errs <- fmt.Sprintf("%v %v: Open of a batch of %d gave back other packets", k.version, k.suite, len(pkts))
							return
						}
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for e := range errs {
			t.Error(e)
		}
	}
}
