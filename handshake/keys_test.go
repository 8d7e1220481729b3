// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package handshake

import (
	"encoding/base64"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
)

// RFC 7748 section 6.1: X25519 key pairs of Alice and Bob.
var rfc7748Keys = []struct{ private, public string }{
	{"77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a", "8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a"},
	{"5dab087e624a8a4b79e17f8b83800ee66f3bb1292618b6fd1c2f8b27ff88e0eb", "de9edb7d7b7dc1b4d35b61c2ece435373f8343c85b78674dadfc7e146f882b4f"},
}

func hexToBase64(t *testing.T, h string) string {
	t.Helper()
	b, err := hex.DecodeString(h)
	if err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(b)
}

// TestPublicKeyKnownAnswers feeds the RFC's private keys in wg's base64 format: they are not
// clamped, which is how wg(8) accepts them too, and PublicKey must print the RFC's public keys.
func TestPublicKeyKnownAnswers(t *testing.T) {
	for _, v := range rfc7748Keys {
		private, err := ParsePrivateKey(hexToBase64(t, v.private))
		if err != nil {
			t.Fatal(err)
		}
		if got, want := private.PublicKey().String(), hexToBase64(t, v.public); got != want {
			t.Errorf("public key %s, want %s", got, want)
		}
		if got := private.String(); got != hexToBase64(t, v.private) {
			t.Errorf("private key round trip %s", got)
		}
		public, err := ParsePublicKey(hexToBase64(t, v.public))
		if err != nil || public != private.PublicKey() {
			t.Errorf("ParsePublicKey: %v, %v", public, err)
		}
	}
}

func TestGeneratePrivateKeyIsClamped(t *testing.T) {
	seen := make(map[PrivateKey]bool)
	for range 32 {
		k := mustGenerate(t)
		if k[0]&7 != 0 || k[31]&128 != 0 || k[31]&64 == 0 {
			t.Fatalf("key %x is not clamped", k)
		}
		if seen[k] {
			t.Fatal("the same key generated twice")
		}
		seen[k] = true
	}
	psk, err := GeneratePresharedKey()
	if err != nil || psk.IsZero() {
		t.Fatalf("GeneratePresharedKey: %v, zero %v", err, psk.IsZero())
	}
}

func TestParseKeyRejectsBadEncodings(t *testing.T) {
	valid := mustGenerate(t).PublicKey().String()
	// The 44th character is padding; the 43rd carries 4 data bits and 2 bits that must be zero.
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
	last := strings.IndexByte(alphabet, valid[42])
	nonCanonical := valid[:42] + string(alphabet[last|1]) + "="
	for name, s := range map[string]string{
		"empty":         "",
		"short":         valid[:43],
		"long":          valid + "A",
		"no padding":    valid[:43] + "A",
		"bad character": "!" + valid[1:],
		"url alphabet":  strings.Repeat("-", 43) + "=",
		"non-canonical": nonCanonical,
		"hex":           strings.Repeat("ab", 32),
	} {
		if _, err := ParsePublicKey(s); !errors.Is(err, ErrKeyEncoding) {
			t.Errorf("%s %q: %v, want ErrKeyEncoding", name, s, err)
		}
		if _, err := ParsePrivateKey(s); !errors.Is(err, ErrKeyEncoding) {
			t.Errorf("private %s: %v, want ErrKeyEncoding", name, err)
		}
		if _, err := ParsePresharedKey(s); !errors.Is(err, ErrKeyEncoding) {
			t.Errorf("preshared %s: %v, want ErrKeyEncoding", name, err)
		}
	}
}

func TestAddPeerKeys(t *testing.T) {
	d := NewIdentity(mustGenerate(t), Limits{})
	if _, err := d.AddPeer(d.PublicKey(), PresharedKey{}); !errors.Is(err, ErrInvalidPeerKey) {
		t.Errorf("own public key: %v, want ErrInvalidPeerKey", err)
	}
	pub := mustGenerate(t).PublicKey()
	if _, err := d.AddPeer(pub, PresharedKey{}); err != nil {
		t.Fatal(err)
	}
	if _, err := d.AddPeer(pub, PresharedKey{}); !errors.Is(err, ErrPeerExists) {
		t.Errorf("same peer twice: %v, want ErrPeerExists", err)
	}
	d.RemovePeer(pub)
	if d.Peer(pub) != nil || len(d.Peers()) != 0 {
		t.Error("peer still there after RemovePeer")
	}
}

// TestLowOrderPeer: a peer whose public key is of low order (here all zero) is added, as the
// kernel and wireguard-go add it, but no handshake with it completes: we cannot initiate one, and
// an initiation claiming its key, which anyone can forge (its static-static secret is zero), is
// refused without moving the peer's endpoint or timestamp.
func TestLowOrderPeer(t *testing.T) {
	tp := newTestPair(t, PresharedKey{})
	low, err := tp.b.AddPeer(PublicKey{}, PresharedKey{})
	if err != nil {
		t.Fatalf("AddPeer of a low-order key: %v, want it added", err)
	}
	if _, err := tp.b.CreateInitiation(low); !errors.Is(err, ErrInvalidPeerKey) {
		t.Errorf("CreateInitiation to a low-order peer: %v, want ErrInvalidPeerKey", err)
	}

	// The forger: an identity that claims the zero public key and uses the zero secret, which is
	// what b computes for that key.
	forger := NewIdentity(mustGenerate(t), Limits{Now: tp.clock.Now})
	bOnForger, err := forger.AddPeer(tp.b.PublicKey(), PresharedKey{})
	if err != nil {
		t.Fatal(err)
	}
	forger.static.Load().public = PublicKey{}
	bOnForger.staticStatic = [32]byte{}
	msg, err := forger.CreateInitiation(bOnForger)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tp.b.HandleMessage(msg, tp.addrA); !errors.Is(err, ErrInvalidPeerKey) {
		t.Errorf("forged initiation from the low-order peer: %v, want ErrInvalidPeerKey", err)
	}
	low.mu.Lock()
	endpoint, timestamp := low.endpoint, low.lastTimestamp
	low.mu.Unlock()
	if endpoint.IsValid() || timestamp != ([timestampSize]byte{}) {
		t.Errorf("the refused initiation set the peer's endpoint %v or timestamp %x", endpoint, timestamp)
	}
}

func TestClamped(t *testing.T) {
	if (PrivateKey{}).Clamped() != (PrivateKey{}) {
		t.Error("the zero key (none) must stay zero")
	}
	var k PrivateKey
	for i := range k {
		k[i] = 0xff
	}
	c := k.Clamped()
	if c[0] != 0xf8 || c[31] != 0x7f || c[1] != 0xff || k[0] != 0xff {
		t.Errorf("Clamped: %x from %x", c, k)
	}
	if c.PublicKey() != k.PublicKey() {
		t.Error("clamping changed the public key (X25519 clamps anyway)")
	}
}
