// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package quic

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"fmt"
	"math/rand/v2"
	"testing"
)

// retryOracle computes a Retry Integrity Tag with crypto/aes and crypto/cipher from the pseudo-packet
// of RFC 9001 section 5.8, built here on its own.
func retryOracle(t testing.TB, v Version, odcid, retry []byte) []byte {
	p, ok := versionParams(v)
	if !ok {
		t.Fatalf("version %x", v)
	}
	block, err := aes.NewCipher(p.retryKey[:])
	if err != nil {
		t.Fatal(err)
	}
	gcm, err := cipher.NewGCM(block)
	if err != nil {
		t.Fatal(err)
	}
	pseudo := append([]byte{byte(len(odcid))}, odcid...)
	return gcm.Seal(nil, p.retryNonce[:], nil, append(pseudo, retry...))
}

// TestRetryDifferential: RetryTag and VerifyRetry against the oracle on random connection IDs of 0
// to 20 bytes and Retry packets of 0 to 1500, both versions; every flipped bit of a tagged packet,
// and every other connection ID tried, fails.
func TestRetryDifferential(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	for _, v := range []Version{Version1, Version2} {
		for i := range 200 {
			odcid := make([]byte, rng.IntN(maxConnIDLen+1))
			retry := make([]byte, rng.IntN(1501))
			for _, b := range [][]byte{odcid, retry} {
				for j := range b {
					b[j] = byte(rng.Uint32())
				}
			}
			tag, err := RetryTag(v, odcid, retry)
			if want := retryOracle(t, v, odcid, retry); err != nil || !bytes.Equal(tag[:], want) {
				t.Fatalf("%x, %d-byte odcid, %d-byte packet: RetryTag = %x, %v, want %x", v, len(odcid), len(retry), tag, err, want)
			}
			packet := append(retry, tag[:]...)
			if !VerifyRetry(v, odcid, packet) {
				t.Fatalf("%x: VerifyRetry rejects a packet with its own tag", v)
			}
			if i%20 == 0 { // every bit of a few packets
				for bit := range 8 * len(packet) {
					packet[bit/8] ^= 1 << (bit % 8)
					if VerifyRetry(v, odcid, packet) {
						t.Fatalf("%x: VerifyRetry accepts a packet with bit %d flipped", v, bit)
					}
					packet[bit/8] ^= 1 << (bit % 8)
				}
			}
			other := append([]byte(nil), odcid...)
			if len(other) > 0 && rng.IntN(2) == 0 {
				other[rng.IntN(len(other))] ^= 1
			} else if len(other) < maxConnIDLen {
				other = append(other, 0) // the length is in the pseudo-packet too
			} else {
				other = other[:len(other)-1]
			}
			if VerifyRetry(v, other, packet) {
				t.Fatalf("%x: VerifyRetry accepts another connection ID", v)
			}
		}
	}
}

// TestRetryMisuse: unknown versions, connection IDs past 20 bytes and packets shorter than a tag get
// an error or false, never a panic; a packet larger than a datagram still gets its tag.
func TestRetryMisuse(t *testing.T) {
	long := make([]byte, maxConnIDLen+1)
	for _, c := range []struct {
		v     Version
		odcid []byte
	}{{0xff00001d, nil}, {0, []byte{1}}, {Version1, long}, {Version2, long}} {
		if _, err := RetryTag(c.v, c.odcid, make([]byte, 40)); err == nil {
			t.Errorf("RetryTag(%x, %d-byte odcid) gives no error", c.v, len(c.odcid))
		}
		if VerifyRetry(c.v, c.odcid, make([]byte, 40)) {
			t.Errorf("VerifyRetry(%x, %d-byte odcid) reports true", c.v, len(c.odcid))
		}
	}
	for _, n := range []int{0, 1, 15} {
		if VerifyRetry(Version1, nil, make([]byte, n)) {
			t.Errorf("VerifyRetry of %d bytes reports true", n)
		}
	}
	if VerifyRetry(Version1, nil, nil) {
		t.Errorf("VerifyRetry of nil reports true")
	}
	// Past a datagram: still the tag, from a buffer the pool does not keep.
	huge := make([]byte, maxPooledPseudo+100)
	for i := range 2 {
		tag, err := RetryTag(Version2, []byte{7}, huge)
		if want := retryOracle(t, Version2, []byte{7}, huge); err != nil || !bytes.Equal(tag[:], want) {
			t.Errorf("RetryTag of %d bytes (call %d) = %x, %v, want %x", len(huge), i, tag, err, want)
		}
	}
}

// TestRetryAllocs: with the pool warm, computing and verifying a tag allocates nothing.
func TestRetryAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	odcid, packet := make([]byte, 8), make([]byte, 80)
	allocs := testing.AllocsPerRun(50, func() {
		tag, _ := RetryTag(Version1, odcid, packet[:64])
		copy(packet[64:], tag[:])
		VerifyRetry(Version1, odcid, packet)
	})
	if allocs != 0 {
		t.Errorf("RetryTag and VerifyRetry allocate %v times", allocs)
	}
}

// FuzzVerifyRetry: VerifyRetry never panics, and accepts exactly the packets that end with
// RetryTag's tag of the bytes before.
func FuzzVerifyRetry(f *testing.F) {
	odcid := unhex(f, "8394c8f03e515708")
	f.Add(uint32(Version1), odcid, unhex(f, "ff000000010008f067a5502a4262b5746f6b656e04a265ba2eff4d829058fb3f0f2496ba")) // RFC 9001 A.4
	f.Add(uint32(Version2), odcid, unhex(f, "cf6b3343cf0008f067a5502a4262b5746f6b656ec8646ce8bfe33952d955543665dcc7b6")) // RFC 9369 A.4
	f.Add(uint32(Version2), []byte{}, []byte{})
	f.Fuzz(func(t *testing.T, v uint32, odcid, packet []byte) {
		ok := VerifyRetry(Version(v), odcid, packet)
		if len(packet) < 16 {
			if ok {
				t.Fatal("VerifyRetry accepts a packet shorter than a tag")
			}
			return
		}
		tag, err := RetryTag(Version(v), odcid, packet[:len(packet)-16])
		if want := err == nil && bytes.Equal(tag[:], packet[len(packet)-16:]); ok != want {
			t.Fatalf("VerifyRetry = %v, RetryTag gives %x, %v", ok, tag, err)
		}
	})
}

// ExampleVerifyRetry: a server answers a client's first Initial with a Retry, and the client checks
// its integrity tag before using its token.
func ExampleVerifyRetry() {
	odcid := []byte{0x83, 0x94, 0xc8, 0xf0, 0x3e, 0x51, 0x57, 0x08} // the client Initial's Destination Connection ID
	// A Retry packet up to its tag: first byte, version, the client's Source Connection ID (empty),
	// the server's new one, then the token.
	retry := append([]byte{0xff, 0, 0, 0, 1, 0, 8, 0xf0, 0x67, 0xa5, 0x50, 0x2a, 0x42, 0x62, 0xb5}, "token"...)
	tag, err := RetryTag(Version1, odcid, retry)
	if err != nil {
		panic(err)
	}
	packet := append(retry, tag[:]...)

	fmt.Println(VerifyRetry(Version1, odcid, packet))
	packet[len(packet)-1] ^= 1
	fmt.Println(VerifyRetry(Version1, odcid, packet))
	// Output:
	// true
	// false
}
