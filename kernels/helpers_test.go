// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package kernels_test

// Shared helpers of the kernels test suite: the suites under test, their reference implementations
// (the oracle), deterministic random inputs and panic capture.

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"golang.org/x/crypto/chacha20poly1305"

	"github.com/wirebatch/wirebatch/kernels"
)

// allSuites lists every suite the API offers.
var allSuites = []kernels.Suite{
	kernels.ChaCha20Poly1305,
	kernels.XChaCha20Poly1305,
	kernels.AES128GCM,
	kernels.AES192GCM,
	kernels.AES256GCM,
}

// batchPath is one way to run a batch: the default path (kernels.Seal and Open, which route each
// batch by this CPU's class and its shape, and so mix the tiers' kernels within one call, as users
// run them) or one forced tier.
type batchPath interface {
	Seal(ops []kernels.Op)
	Open(ops []kernels.Op) (failed int)
	String() string
}

// defaultPath is kernels.Seal and kernels.Open as a batchPath.
type defaultPath struct{}

func (defaultPath) Seal(ops []kernels.Op)              { kernels.Seal(ops) }
func (defaultPath) Open(ops []kernels.Op) (failed int) { return kernels.Open(ops) }
func (defaultPath) String() string                     { return "default" }

// batchPaths is the default path, then every tier of Tiers().
func batchPaths() []batchPath {
	ps := []batchPath{defaultPath{}}
	for _, t := range kernels.Tiers() {
		ps = append(ps, t)
	}
	return ps
}

// oracleAEAD returns the reference implementation of suite s: crypto/cipher's GCM (standard 12-byte
// nonce, 16-byte tag) or golang.org/x/crypto/chacha20poly1305's New and NewX. Every result of every
// tier must be byte-identical to it.
func oracleAEAD(tb testing.TB, s kernels.Suite, key []byte) cipher.AEAD {
	tb.Helper()
	var a cipher.AEAD
	var err error
	switch s {
	case kernels.ChaCha20Poly1305:
		a, err = chacha20poly1305.New(key)
	case kernels.XChaCha20Poly1305:
		a, err = chacha20poly1305.NewX(key)
	case kernels.AES128GCM, kernels.AES192GCM, kernels.AES256GCM:
		var b cipher.Block
		if b, err = aes.NewCipher(key); err == nil {
			a, err = cipher.NewGCM(b)
		}
	default:
		tb.Fatalf("no oracle for %v", s)
	}
	if err != nil {
		tb.Fatalf("oracle for %v: %v", s, err)
	}
	return a
}

// testKey is one key of the suite under test with its oracle.
type testKey struct {
	suite  kernels.Suite
	raw    []byte
	key    *kernels.Key
	oracle cipher.AEAD
}

func newTestKey(tb testing.TB, s kernels.Suite, raw []byte) *testKey {
	tb.Helper()
	k, err := kernels.NewKey(s, raw)
	if err != nil {
		tb.Fatalf("NewKey(%v, %d bytes): %v", s, len(raw), err)
	}
	return &testKey{suite: s, raw: bytes.Clone(raw), key: k, oracle: oracleAEAD(tb, s, raw)}
}

// keyPool returns perSuite random keys of every suite, in suite order.
func keyPool(tb testing.TB, r *rand.Rand, perSuite int) []*testKey {
	var ks []*testKey
	for _, s := range allSuites {
		for range perSuite {
			ks = append(ks, newTestKey(tb, s, randBytes(r, s.KeySize())))
		}
	}
	return ks
}

// newRand returns a generator seeded from the test name, so a failure reproduces run after run while
// different tests see different inputs.
func newRand(tb testing.TB) *rand.Rand {
	var seed uint64 = 0x9e3779b97f4a7c15
	for _, c := range []byte(tb.Name()) {
		seed = (seed ^ uint64(c)) * 0x100000001b3
	}
	return rand.New(rand.NewPCG(seed, 0x7769726562617463)) // "wirebatc"
}

func randBytes(r *rand.Rand, n int) []byte {
	b := make([]byte, n)
	fillRand(r, b)
	return b
}

func fillRand(r *rand.Rand, b []byte) {
	for i := range b {
		b[i] = byte(r.Uint32())
	}
}

// fill writes a non-zero pattern to b, so a test can tell "zeroed" and "written" from "untouched".
func fill(b []byte, v byte) {
	for i := range b {
		b[i] = v
	}
}

func isZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

func isFilled(b []byte, v byte) bool {
	for _, c := range b {
		if c != v {
			return false
		}
	}
	return true
}

// unaligned returns n bytes at offset off of a fresh buffer filled with the guard pattern, so that
// kernels see every alignment and an overrun lands in the guardLen bytes past the end (which the
// slice's capacity keeps reachable for guardsIntact).
func unaligned(n, off int) []byte {
	buf := make([]byte, off+n+guardLen)
	fill(buf, guardByte)
	return buf[off : off+n]
}

const (
	guardLen  = 16
	guardByte = 0xA5 // also the "untouched Dst" pattern
)

// guardsIntact reports whether the guardLen bytes past the end of b, a slice returned by unaligned,
// are still the guard pattern.
func guardsIntact(b []byte) bool {
	return isFilled(b[len(b):len(b)+guardLen], guardByte)
}

// placed copies src to a fresh unaligned buffer at offset off (0..7).
func placed(src []byte, off int) []byte {
	b := unaligned(len(src), off)
	copy(b, src)
	return b
}

// packetLen draws a message length weighted to packet sizes: mostly 0..1500 (a tunnel MTU), some
// jumbo and GSO-sized ones up to max (66000 covers a 64 KiB GSO super-packet plus headers).
func packetLen(r *rand.Rand, max int) int {
	var n int
	switch p := r.IntN(100); {
	case p < 80:
		n = r.IntN(1501)
	case p < 95:
		n = 1501 + r.IntN(16000)
	default:
		n = r.IntN(66001)
	}
	return min(n, max)
}

// expectPanic runs f and fails unless it panics with a message prefixed "kernels:". It returns the
// message.
func expectPanic(tb testing.TB, what string, f func()) (msg string) {
	tb.Helper()
	defer func() {
		tb.Helper()
		v := recover()
		if v == nil {
			tb.Errorf("%s: did not panic", what)
			return
		}
		msg = fmt.Sprint(v)
		if !strings.HasPrefix(msg, "kernels:") {
			tb.Errorf("%s: panic %q lacks the kernels: prefix", what, msg)
		}
	}()
	f()
	return ""
}

// mustHex decodes a hex string written with optional white space (as the RFCs print them).
func mustHex(s string) []byte {
	s = strings.Join(strings.Fields(s), "")
	b, err := hex.DecodeString(s)
	if err != nil {
		panic(err)
	}
	return b
}

// sealOracle returns ciphertext||tag from the oracle.
func (k *testKey) sealOracle(nonce, ad, pt []byte) []byte {
	return k.oracle.Seal(nil, nonce, pt, ad)
}

// errSentinel is stored in Op.Err before a call so a test sees whether Open wrote Err.
var errSentinel = fmt.Errorf("sentinel: Err not written")

// scaled returns n, cut for -short and the race detector (which slows the Generic tier's arithmetic
// about tenfold), keeping `go test ./kernels/` near its time budget on a shared two-core machine.
func scaled(n int) int {
	if raceEnabled {
		n /= 4
	}
	if testing.Short() {
		n /= 4
	}
	return max(n, 1)
}
