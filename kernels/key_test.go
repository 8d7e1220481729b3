// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package kernels_test

// Suite metadata, key construction and destruction, tier names and the tier list.

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/wirebatch/wirebatch/kernels"
)

func TestSuiteMetadata(t *testing.T) {
	for _, c := range []struct {
		s                  kernels.Suite
		name               string
		keySize, nonceSize int
	}{
		{kernels.ChaCha20Poly1305, "ChaCha20-Poly1305", 32, 12},   // RFC 8439 section 2.8
		{kernels.XChaCha20Poly1305, "XChaCha20-Poly1305", 32, 24}, // draft-irtf-cfrg-xchacha section 2
		{kernels.AES128GCM, "AES-128-GCM", 16, 12},                // SP 800-38D with 96-bit IVs
		{kernels.AES192GCM, "AES-192-GCM", 24, 12},
		{kernels.AES256GCM, "AES-256-GCM", 32, 12},
		{0, "Suite(0)", 0, 0},
		{6, "Suite(6)", 0, 0},
		{255, "Suite(255)", 0, 0},
	} {
		if got := c.s.String(); got != c.name {
			t.Errorf("Suite(%d).String() = %q, want %q", uint8(c.s), got, c.name)
		}
		if got := c.s.KeySize(); got != c.keySize {
			t.Errorf("%v.KeySize() = %d, want %d", c.s, got, c.keySize)
		}
		if got := c.s.NonceSize(); got != c.nonceSize {
			t.Errorf("%v.NonceSize() = %d, want %d", c.s, got, c.nonceSize)
		}
	}
	if kernels.TagSize != 16 {
		t.Errorf("TagSize = %d, want 16", kernels.TagSize)
	}
	if kernels.ErrAuth == nil || !strings.HasPrefix(kernels.ErrAuth.Error(), "kernels:") {
		t.Errorf("ErrAuth = %v, want a kernels:-prefixed error", kernels.ErrAuth)
	}
}

func TestNewKeyErrors(t *testing.T) {
	for _, s := range allSuites {
		for _, n := range []int{0, 1, 15, 16, 17, 23, 24, 25, 31, 32, 33, 64} {
			k, err := kernels.NewKey(s, make([]byte, n))
			if n == s.KeySize() {
				if err != nil || k == nil {
					t.Errorf("NewKey(%v, %d bytes) = %v, %v; want a key", s, n, k, err)
				} else if k.Suite() != s {
					t.Errorf("NewKey(%v, ...).Suite() = %v", s, k.Suite())
				}
				continue
			}
			if err == nil || k != nil {
				t.Errorf("NewKey(%v, %d bytes) = %v, %v; want an error", s, n, k, err)
			} else if !strings.HasPrefix(err.Error(), "kernels:") {
				t.Errorf("NewKey(%v, %d bytes) error %q lacks the kernels: prefix", s, n, err)
			}
		}
	}
	for _, s := range []kernels.Suite{0, 6, 7, 255} {
		for _, n := range []int{0, 16, 32} {
			if k, err := kernels.NewKey(s, make([]byte, n)); err == nil || k != nil {
				t.Errorf("NewKey(unknown %v, %d bytes) = %v, %v; want an error", s, n, k, err)
			}
		}
	}
	// nil is a zero-length key, not a crash.
	if _, err := kernels.NewKey(kernels.AES128GCM, nil); err == nil {
		t.Error("NewKey(AES-128-GCM, nil) succeeded")
	}
}

// TestNewKeyCopies: NewKey documents that the caller may wipe its key bytes afterwards.
func TestNewKeyCopies(t *testing.T) {
	r := newRand(t)
	for _, s := range allSuites {
		raw := randBytes(r, s.KeySize())
		k := newTestKey(t, s, raw)
		clear(raw)
		nonce, pt := randBytes(r, s.NonceSize()), randBytes(r, 100)
		ops := []kernels.Op{{Key: k.key, Nonce: nonce, Src: pt, Dst: make([]byte, len(pt)+kernels.TagSize)}}
		kernels.Seal(ops)
		if want := k.sealOracle(nonce, nil, pt); !bytes.Equal(ops[0].Dst, want) {
			t.Errorf("%v: wiping the caller's key bytes changed the Key", s)
		}
	}
}

func TestDestroy(t *testing.T) {
	r := newRand(t)
	for _, s := range allSuites {
		k := newTestKey(t, s, randBytes(r, s.KeySize()))
		other := newTestKey(t, s, k.raw) // an independent Key of the same bytes
		nonce, pt := randBytes(r, s.NonceSize()), randBytes(r, 64)
		ct := k.sealOracle(nonce, nil, pt)

		k.key.Destroy()
		k.key.Destroy() // harmless twice
		if k.key.Suite() != s {
			t.Errorf("%v: Suite() after Destroy = %v", s, k.key.Suite())
		}
		for _, tier := range kernels.Tiers() {
			seal := []kernels.Op{{Key: k.key, Nonce: nonce, Src: pt, Dst: make([]byte, len(ct))}}
			expectPanic(t, s.String()+" Seal with a destroyed key on "+tier.String(), func() { tier.Seal(seal) })
			open := []kernels.Op{{Key: k.key, Nonce: nonce, Src: ct, Dst: make([]byte, len(pt))}}
			expectPanic(t, s.String()+" Open with a destroyed key on "+tier.String(), func() { tier.Open(open) })
			if !isZero(seal[0].Dst) || !isZero(open[0].Dst) {
				t.Errorf("%v: a destroyed key produced output on %v", s, tier)
			}
		}
		// Destroying one Key does not disturb another made from the same bytes.
		ops := []kernels.Op{{Key: other.key, Nonce: nonce, Src: ct, Dst: make([]byte, len(pt))}}
		if kernels.Open(ops) != 0 || !bytes.Equal(ops[0].Dst, pt) {
			t.Errorf("%v: Destroy of one Key broke another", s)
		}
	}
}

func TestTiers(t *testing.T) {
	for tier, name := range map[kernels.Tier]string{
		kernels.Generic: "Generic", kernels.AVX2: "AVX2", kernels.AVX512: "AVX512", kernels.Stdlib: "Stdlib", 9: "Tier(9)",
	} {
		if got := tier.String(); got != name {
			t.Errorf("Tier(%d).String() = %q, want %q", uint8(tier), got, name)
		}
	}
	ts := kernels.Tiers()
	t.Logf("tiers on this CPU and build: %v", ts)
	// The kernel tiers widest first, then Stdlib and Generic, which every build has; no duplicates.
	if len(ts) < 2 || ts[len(ts)-2] != kernels.Stdlib || ts[len(ts)-1] != kernels.Generic {
		t.Fatalf("Tiers() = %v: Stdlib and Generic must be listed, last", ts)
	}
	rank := map[kernels.Tier]int{kernels.AVX512: 0, kernels.AVX2: 1, kernels.Stdlib: 2, kernels.Generic: 3}
	for i := 1; i < len(ts); i++ {
		if rank[ts[i-1]] >= rank[ts[i]] {
			t.Errorf("Tiers() = %v is not in order", ts)
		}
	}
	// The list is the caller's to keep: changing it must not change the package's.
	ts[len(ts)-1] = 200
	if again := kernels.Tiers(); again[len(again)-1] != kernels.Generic {
		t.Errorf("modifying the slice Tiers returned changed the tier list: %v", again)
	}
}

func TestErrAuthIdentity(t *testing.T) {
	// Open reports the one ErrAuth value, comparable with == and errors.Is.
	k := newTestKey(t, kernels.ChaCha20Poly1305, make([]byte, 32))
	ops := []kernels.Op{{Key: k.key, Nonce: make([]byte, 12), Src: make([]byte, 20), Dst: make([]byte, 4)}}
	if kernels.Open(ops) != 1 || ops[0].Err != kernels.ErrAuth || !errors.Is(ops[0].Err, kernels.ErrAuth) {
		t.Errorf("forged Open: Err = %v, want ErrAuth", ops[0].Err)
	}
}
