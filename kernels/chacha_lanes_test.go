// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package kernels_test

// Lane handling of the ChaCha-family SIMD tiers: every length at every lane position, lanes retiring
// and refilling at every point, block and lane boundaries, long messages, forged ops among good ones,
// mixed suites. Every tier is checked against golang.org/x/crypto/chacha20poly1305 (and so against
// the Generic tier, which the same oracle checks).

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"fmt"
	"math/rand/v2"
	"testing"

	"golang.org/x/crypto/chacha20poly1305"

	"github.com/wirebatch/wirebatch/kernels"
)

// laneCase is one op of a lane test with its oracle.
type laneCase struct {
	suite   kernels.Suite
	oracle  cipher.AEAD
	key     *kernels.Key
	nonce   []byte
	ad      []byte
	plain   []byte
	inPlace bool
	forged  bool // Open: one ciphertext or tag byte flipped
}

// laneKeys makes n keys of suite s with their oracles.
func laneKeys(t *testing.T, s kernels.Suite, n int, rng *rand.ChaCha8) ([]*kernels.Key, []cipher.AEAD) {
	t.Helper()
	keys := make([]*kernels.Key, n)
	oracles := make([]cipher.AEAD, n)
	for i := range keys {
		raw := make([]byte, s.KeySize())
		rng.Read(raw)
		k, err := kernels.NewKey(s, raw)
		if err != nil {
			t.Fatal(err)
		}
		var a cipher.AEAD
		switch s {
		case kernels.ChaCha20Poly1305:
			a, err = chacha20poly1305.New(raw)
		case kernels.XChaCha20Poly1305:
			a, err = chacha20poly1305.NewX(raw)
		default:
			var b cipher.Block
			if b, err = aes.NewCipher(raw); err == nil {
				a, err = cipher.NewGCM(b)
			}
		}
		if err != nil {
			t.Fatal(err)
		}
		keys[i], oracles[i] = k, a
	}
	return keys, oracles
}

// checkLanes seals and opens cases on tier and compares every result with the oracle.
func checkLanes(t *testing.T, tier kernels.Tier, cases []laneCase) {
	t.Helper()
	ops := make([]kernels.Op, len(cases))
	want := make([][]byte, len(cases))
	for i, c := range cases {
		want[i] = c.oracle.Seal(nil, c.nonce, c.plain, c.ad)
		buf := make([]byte, len(c.plain)+kernels.TagSize+8)[3:] // odd offset
		src := buf[:len(c.plain)]
		copy(src, c.plain)
		dst := buf[:len(want[i])]
		if !c.inPlace {
			dst = make([]byte, len(want[i]))
		}
		ops[i] = kernels.Op{Key: c.key, Nonce: c.nonce, AD: c.ad, Src: src, Dst: dst}
	}
	tier.Seal(ops)
	for i, c := range cases {
		if !bytes.Equal(ops[i].Dst, want[i]) {
			t.Fatalf("%v Seal op %d of %d (%v, len %d, AD %d, in place %v) differs from x/crypto",
				tier, i, len(cases), c.suite, len(c.plain), len(c.ad), c.inPlace)
		}
	}

	wantFailed := 0
	for i, c := range cases {
		ct := ops[i].Dst
		if c.forged {
			ct[(len(ct)-1)*(i%2)] ^= 0x40 // first or last byte: ciphertext or tag
			wantFailed++
		}
		dst := ct[:len(c.plain)]
		if !c.inPlace {
			dst = make([]byte, len(c.plain))
		}
		ops[i] = kernels.Op{Key: c.key, Nonce: c.nonce, AD: c.ad, Src: ct, Dst: dst, Err: errLaneUnset}
	}
	if failed := tier.Open(ops); failed != wantFailed {
		t.Fatalf("%v Open of %d ops: %d failed, want %d", tier, len(cases), failed, wantFailed)
	}
	for i, c := range cases {
		op := &ops[i]
		if c.forged {
			if op.Err != kernels.ErrAuth || !bytes.Equal(op.Dst, make([]byte, len(op.Dst))) {
				t.Fatalf("%v Open forged op %d (len %d): Err = %v, Dst zeroed = %v", tier, i, len(c.plain),
					op.Err, bytes.Equal(op.Dst, make([]byte, len(op.Dst))))
			}
			continue
		}
		if op.Err != nil || !bytes.Equal(op.Dst, c.plain) {
			t.Fatalf("%v Open op %d of %d (%v, len %d, AD %d, in place %v): Err = %v, plaintext equal = %v",
				tier, i, len(cases), c.suite, len(c.plain), len(c.ad), c.inPlace, op.Err, bytes.Equal(op.Dst, c.plain))
		}
	}
}

var errLaneUnset = fmt.Errorf("not written")

// TestChaChaLaneSweep runs batches of 1..40 ops whose lengths walk through 0..1100, so every length
// lands in every lane position and lanes retire and refill at every offset.
func TestChaChaLaneSweep(t *testing.T) {
	const maxLen = 1100
	for _, tier := range kernels.Tiers() {
		for _, s := range []kernels.Suite{kernels.ChaCha20Poly1305, kernels.XChaCha20Poly1305} {
			t.Run(fmt.Sprintf("%v/%v", tier, s), func(t *testing.T) {
				t.Parallel()
				rng := rand.NewChaCha8([32]byte{byte(tier), byte(s)})
				keys, oracles := laneKeys(t, s, 5, rng)
				plain := make([]byte, maxLen+1)
				rng.Read(plain)
				step := 1
				if testing.Short() {
					step = 7
				}
				for b := 1; b <= 40; b += step {
					for start := 0; start <= maxLen; start += b {
						cases := make([]laneCase, b)
						for j := range cases {
							k := (start + j) % len(keys)
							n := (start + j*37) % (maxLen + 1)
							if j%2 == 0 {
								n = (start + j) % (maxLen + 1)
							}
							nonce := make([]byte, s.NonceSize())
							rng.Read(nonce)
							cases[j] = laneCase{suite: s, oracle: oracles[k], key: keys[k], nonce: nonce,
								ad: plain[:(start+j)%40], plain: plain[:n], inPlace: j%3 == 0,
								forged: j == start%b && start%3 == 0}
						}
						checkLanes(t, tier, cases)
					}
				}
			})
		}
	}
}

// TestChaChaLaneBoundaries puts lengths on and one byte around 16-byte Poly1305 blocks, 64-byte
// ChaCha20 blocks and the assembly's per-call bound (1024 blocks), in batches around the lane counts.
func TestChaChaLaneBoundaries(t *testing.T) {
	var lens []int
	for _, b := range []int{16, 64, 128, 1024, 1408, 1420, 4096, 64 << 10, 64<<10 + 1024} {
		lens = append(lens, b-1, b, b+1)
	}
	lens = append(lens, 0, 1, 200<<10+17) // a message over many assembly calls
	for _, tier := range kernels.Tiers() {
		for _, s := range []kernels.Suite{kernels.ChaCha20Poly1305, kernels.XChaCha20Poly1305} {
			t.Run(fmt.Sprintf("%v/%v", tier, s), func(t *testing.T) {
				rng := rand.NewChaCha8([32]byte{1, byte(tier), byte(s)})
				keys, oracles := laneKeys(t, s, 3, rng)
				plain := make([]byte, 300<<10)
				rng.Read(plain)
				for _, b := range []int{1, 2, 3, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 130} {
					cases := make([]laneCase, b)
					for j := range cases {
						nonce := make([]byte, s.NonceSize())
						rng.Read(nonce)
						k := j % len(keys)
						ad := plain[:(j*17)%70]
						cases[j] = laneCase{suite: s, oracle: oracles[k], key: keys[k], nonce: nonce, ad: ad,
							plain: plain[len(ad) : len(ad)+lens[(j+b)%len(lens)]], inPlace: j%2 == 1,
							forged: j%11 == 5}
					}
					checkLanes(t, tier, cases)
				}
			})
		}
	}
}

// TestChaChaLaneLongChunks runs batches whose messages are all at least 1 KiB: equal and random
// lengths, with and without AD, some in place and some forged, over one and several chunks.
func TestChaChaLaneLongChunks(t *testing.T) {
	for _, tier := range kernels.Tiers() {
		for _, s := range []kernels.Suite{kernels.ChaCha20Poly1305, kernels.XChaCha20Poly1305} {
			t.Run(fmt.Sprintf("%v/%v", tier, s), func(t *testing.T) {
				rng := rand.NewChaCha8([32]byte{2, byte(tier), byte(s)})
				r := rand.New(rng)
				keys, oracles := laneKeys(t, s, 4, rng)
				plain := make([]byte, 9100)
				rng.Read(plain)
				for _, b := range []int{8, 16, 17, 40, 64, 65, 130} {
					for _, shape := range []string{"equal", "random", "ad"} {
						cases := make([]laneCase, b)
						for j := range cases {
							nonce := make([]byte, s.NonceSize())
							rng.Read(nonce)
							k := j % len(keys)
							n := 1420
							var ad []byte
							switch shape {
							case "random":
								n = 1024 + r.IntN(8000)
							case "ad":
								n = 1024 + r.IntN(3000)
								ad = plain[:r.IntN(40)]
							}
							cases[j] = laneCase{suite: s, oracle: oracles[k], key: keys[k], nonce: nonce, ad: ad,
								plain: plain[len(ad) : len(ad)+n], inPlace: j%2 == 0, forged: j%13 == 7}
						}
						checkLanes(t, tier, cases)
					}
				}
			})
		}
	}
}

// TestChaChaLaneMixedSuites interleaves ChaCha20, XChaCha20 and AES-GCM ops in one batch: each family
// takes only its own ops and every op is processed exactly once.
func TestChaChaLaneMixedSuites(t *testing.T) {
	suites := []kernels.Suite{kernels.ChaCha20Poly1305, kernels.XChaCha20Poly1305, kernels.AES128GCM,
		kernels.AES256GCM}
	for _, tier := range kernels.Tiers() {
		t.Run(tier.String(), func(t *testing.T) {
			rng := rand.NewChaCha8([32]byte{2, byte(tier)})
			var keys [][]*kernels.Key
			var oracles [][]cipher.AEAD
			for _, s := range suites {
				k, o := laneKeys(t, s, 2, rng)
				keys, oracles = append(keys, k), append(oracles, o)
			}
			plain := make([]byte, 3000)
			rng.Read(plain)
			for _, b := range []int{1, 5, 16, 17, 50, 100} {
				cases := make([]laneCase, b)
				for j := range cases {
					si := (j * 7 / 3) % len(suites)
					s := suites[si]
					nonce := make([]byte, s.NonceSize())
					rng.Read(nonce)
					cases[j] = laneCase{suite: s, oracle: oracles[si][j%2], key: keys[si][j%2], nonce: nonce,
						ad: plain[:j%13], plain: plain[100 : 100+(j*131)%2900], inPlace: j%4 == 0,
						forged: j%9 == 4}
				}
				checkLanes(t, tier, cases)
			}
		})
	}
}

// TestChaChaLaneEmpty runs batches in which some ops have neither AD nor message, so their MAC input
// is the lengths block alone (which the IFMA lanes absorb when finishing the tag), among short and
// long ones, some forged.
func TestChaChaLaneEmpty(t *testing.T) {
	for _, tier := range kernels.Tiers() {
		rng := rand.NewChaCha8([32]byte{2, byte(tier)})
		keys, oracles := laneKeys(t, kernels.ChaCha20Poly1305, 2, rng)
		plain := make([]byte, 2000)
		rng.Read(plain)
		for _, b := range []int{8, 16, 17, 40} {
			cases := make([]laneCase, b)
			for j := range cases {
				nonce := make([]byte, 12)
				rng.Read(nonce)
				n, ad := 0, []byte(nil)
				if j%3 == 1 {
					n, ad = []int{15, 64, 577, 1500}[j%4], plain[:j%20]
				}
				cases[j] = laneCase{suite: kernels.ChaCha20Poly1305, oracle: oracles[j%2], key: keys[j%2],
					nonce: nonce, ad: ad, plain: plain[100 : 100+n], forged: j%5 == 3}
			}
			checkLanes(t, tier, cases)
		}
	}
}

// TestChaChaShortGroups aims at the short-group path of the IFMA lanes: runs of 16 ops of at most
// one block, without AD and of one MAC block structure, for every such structure (0..64 bytes):
// alone, beside longer ops, with one op carrying AD (its run goes through the lanes' segments), and
// half at a neighbouring length; under several keys, in place or not, some forged.
func TestChaChaShortGroups(t *testing.T) {
	for _, tier := range kernels.Tiers() {
		for _, s := range []kernels.Suite{kernels.ChaCha20Poly1305, kernels.XChaCha20Poly1305} {
			t.Run(fmt.Sprintf("%v/%v", tier, s), func(t *testing.T) {
				rng := rand.NewChaCha8([32]byte{3, byte(tier), byte(s)})
				keys, oracles := laneKeys(t, s, 3, rng)
				plain := make([]byte, 2000)
				rng.Read(plain)
				for _, n := range []int{0, 1, 15, 16, 17, 31, 32, 33, 47, 48, 49, 63, 64} {
					for _, b := range []int{16, 32, 64, 80, 128} {
						for variant := range 4 {
							cases := make([]laneCase, b)
							for j := range cases {
								nonce := make([]byte, s.NonceSize())
								rng.Read(nonce)
								k := j % len(keys)
								m, ad := n, []byte(nil)
								switch {
								case variant == 1 && j%11 == 7:
									m = 65 + j*13
								case variant == 2 && j == b/2:
									ad = plain[:j%20+1]
								case variant == 3 && j%2 == 1 && n > 0:
									m = n - 1
								}
								cases[j] = laneCase{suite: s, oracle: oracles[k], key: keys[k], nonce: nonce, ad: ad,
									plain: plain[100 : 100+m], inPlace: j%2 == 0, forged: j%5 == 2}
							}
							checkLanes(t, tier, cases)
						}
					}
				}
			})
		}
	}
}
