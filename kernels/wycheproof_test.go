// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package kernels_test

// Project Wycheproof AEAD vectors (testdata/wycheproof/, Apache 2.0; see its README.md for the commit),
// run on every tier inside shuffled batches that mix suites and keys, so that a SIMD tier is exercised
// with the vectors sitting in arbitrary lanes next to other suites' ops.

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/wirebatch/wirebatch/kernels"
)

// wycheproofFile is the part of aead_test_schema_v1.json the tests read.
type wycheproofFile struct {
	Algorithm     string `json:"algorithm"`
	NumberOfTests int    `json:"numberOfTests"`
	TestGroups    []struct {
		KeySize int `json:"keySize"` // bits
		IVSize  int `json:"ivSize"`  // bits
		TagSize int `json:"tagSize"` // bits
		Tests   []struct {
			TcID    int      `json:"tcId"`
			Comment string   `json:"comment"`
			Flags   []string `json:"flags"`
			Key     string   `json:"key"`
			IV      string   `json:"iv"`
			AAD     string   `json:"aad"`
			Msg     string   `json:"msg"`
			CT      string   `json:"ct"`
			Tag     string   `json:"tag"`
			Result  string   `json:"result"` // valid, invalid or acceptable
		} `json:"tests"`
	} `json:"testGroups"`
}

// wycheproofVector is one vector our API can express.
type wycheproofVector struct {
	name                    string // file:tcId, for failure messages
	suite                   kernels.Suite
	key, iv, aad, msg, ctag []byte // ctag is ct||tag
	valid                   bool
}

// loadWycheproof reads one vector file and returns the vectors whose sizes our suites offer, with
// how many of the file's vectors it skipped for each reason.
func loadWycheproof(t *testing.T, file string) (vs []wycheproofVector, skipped map[string]int) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "wycheproof", file))
	if err != nil {
		t.Fatal(err)
	}
	var f wycheproofFile
	if err := json.Unmarshal(data, &f); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	skipped = map[string]int{}
	total := 0
	for _, g := range f.TestGroups {
		for _, tc := range g.Tests {
			total++
			suite, reason := wycheproofSuite(f.Algorithm, g.KeySize, g.IVSize, g.TagSize)
			if reason == "" && tc.Result != "valid" && tc.Result != "invalid" {
				// "acceptable" vectors depend on implementation choices; our contract has no such case.
				reason = "result " + tc.Result
			}
			if reason != "" {
				skipped[reason]++
				continue
			}
			v := wycheproofVector{
				name:  fmt.Sprintf("%s:tcId %d (%s)", file, tc.TcID, tc.Comment),
				suite: suite,
				valid: tc.Result == "valid",
			}
			for _, h := range []struct {
				dst *[]byte
				s   string
			}{{&v.key, tc.Key}, {&v.iv, tc.IV}, {&v.aad, tc.AAD}, {&v.msg, tc.Msg}} {
				if *h.dst, err = hex.DecodeString(h.s); err != nil {
					t.Fatalf("%s: %v", v.name, err)
				}
			}
			ct, err1 := hex.DecodeString(tc.CT)
			tag, err2 := hex.DecodeString(tc.Tag)
			if err1 != nil || err2 != nil {
				t.Fatalf("%s: bad hex in ct or tag", v.name)
			}
			v.ctag = append(ct, tag...)
			vs = append(vs, v)
		}
	}
	if total != f.NumberOfTests {
		t.Errorf("%s: read %d vectors, the file says %d", file, total, f.NumberOfTests)
	}
	return vs, skipped
}

// wycheproofSuite maps a test group's parameters to our suite, or returns why the API cannot express
// them: the suites take 96-bit nonces (192-bit for XChaCha20) and 128-bit tags only.
func wycheproofSuite(alg string, keyBits, ivBits, tagBits int) (kernels.Suite, string) {
	var s kernels.Suite
	switch alg {
	case "AES-GCM":
		switch keyBits {
		case 128:
			s = kernels.AES128GCM
		case 192:
			s = kernels.AES192GCM
		case 256:
			s = kernels.AES256GCM
		default:
			return 0, fmt.Sprintf("AES-GCM %d-bit key", keyBits)
		}
	case "CHACHA20-POLY1305":
		s = kernels.ChaCha20Poly1305
	case "XCHACHA20-POLY1305":
		s = kernels.XChaCha20Poly1305
	default:
		return 0, "algorithm " + alg
	}
	if keyBits != 8*s.KeySize() {
		return 0, fmt.Sprintf("%v with a %d-bit key", s, keyBits)
	}
	if ivBits != 8*s.NonceSize() {
		return 0, fmt.Sprintf("%v with a %d-bit nonce", s, ivBits)
	}
	if tagBits != 8*kernels.TagSize {
		return 0, fmt.Sprintf("%v with a %d-bit tag", s, tagBits)
	}
	return s, ""
}

// minWycheproofRun is a floor on the vectors that must run (there are 819 at the pinned commit: 197
// AES-GCM with 96-bit IVs, 316 ChaCha20-Poly1305, 306 XChaCha20-Poly1305), so that a loader bug that
// skips everything cannot pass silently.
const minWycheproofRun = 800

func TestWycheproof(t *testing.T) {
	var vs []wycheproofVector
	skipped := map[string]int{}
	for _, file := range []string{"aes_gcm_test.json", "chacha20_poly1305_test.json", "xchacha20_poly1305_test.json"} {
		fv, fs := loadWycheproof(t, file)
		vs = append(vs, fv...)
		for reason, n := range fs {
			skipped[file+": "+reason] += n
		}
	}
	reasons := make([]string, 0, len(skipped))
	nskip := 0
	for r, n := range skipped {
		reasons = append(reasons, fmt.Sprintf("%4d  %s", n, r))
		nskip += n
	}
	sort.Strings(reasons)
	t.Logf("Wycheproof: %d vectors run on every tier, %d skipped:", len(vs), nskip)
	for _, r := range reasons {
		t.Log("  " + r)
	}
	if len(vs) < minWycheproofRun {
		t.Fatalf("only %d Wycheproof vectors apply, want at least %d", len(vs), minWycheproofRun)
	}

	keys := make([]*kernels.Key, len(vs))
	for i, v := range vs {
		k, err := kernels.NewKey(v.suite, v.key)
		if err != nil {
			t.Fatalf("%s: NewKey: %v", v.name, err)
		}
		keys[i] = k
	}

	for _, tier := range kernels.Tiers() {
		t.Run(tier.String(), func(t *testing.T) {
			r := newRand(t)
			order := r.Perm(len(vs))
			for len(order) > 0 {
				n := min(1+r.IntN(64), len(order))
				runWycheproofBatch(t, tier, vs, keys, order[:n], r.IntN(8))
				order = order[n:]
			}
		})
	}
}

// runWycheproofBatch seals the valid vectors of idx in one batch and opens all of them in another.
func runWycheproofBatch(t *testing.T, tier kernels.Tier, vs []wycheproofVector, keys []*kernels.Key, idx []int, off int) {
	t.Helper()
	var seal, open []kernels.Op
	var sealIdx []int
	for _, i := range idx {
		v := &vs[i]
		if v.valid {
			seal = append(seal, kernels.Op{
				Key: keys[i], Nonce: placed(v.iv, off), AD: placed(v.aad, off),
				Src: placed(v.msg, off), Dst: unaligned(len(v.msg)+kernels.TagSize, (off+3)%8),
			})
			sealIdx = append(sealIdx, i)
		}
		op := kernels.Op{Key: keys[i], Nonce: placed(v.iv, off), AD: placed(v.aad, off), Src: placed(v.ctag, off), Err: errSentinel}
		if len(v.ctag) >= kernels.TagSize {
			op.Dst = unaligned(len(v.ctag)-kernels.TagSize, (off+5)%8)
		}
		open = append(open, op)
	}

	tier.Seal(seal)
	for j, i := range sealIdx {
		if got := seal[j].Dst; !bytes.Equal(got, vs[i].ctag) {
			t.Errorf("%s: Seal = %x, want %x", vs[i].name, got, vs[i].ctag)
		}
	}

	wantFailed := 0
	for _, i := range idx {
		if !vs[i].valid {
			wantFailed++
		}
	}
	if failed := tier.Open(open); failed != wantFailed {
		t.Errorf("Open of %d vectors: failed = %d, want %d", len(idx), failed, wantFailed)
	}
	for j, i := range idx {
		v, op := &vs[i], &open[j]
		switch {
		case v.valid && (op.Err != nil || !bytes.Equal(op.Dst, v.msg)):
			t.Errorf("%s: Open = %x, %v; want %x, nil", v.name, op.Dst, op.Err, v.msg)
		case !v.valid && (op.Err != kernels.ErrAuth || !isZero(op.Dst)):
			t.Errorf("%s: invalid vector opened: Err = %v, Dst = %x; want ErrAuth and zeroes", v.name, op.Err, op.Dst)
		}
	}
}
