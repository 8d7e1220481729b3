// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package kernels_test

// Fuzz targets. FuzzSealOracle: batches built from fuzzer-chosen keys, nonces, AD, messages and suites
// seal byte-identically to the oracle on the default path and every tier, and open back. FuzzOpen:
// arbitrary bytes handed to Open under every suite, on the default path and every tier, never panic
// and fail unless they are a genuine ciphertext (as the oracle judges), in which case the plaintext
// matches. `go test` runs the seeds; `make fuzz` explores.

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/wirebatch/wirebatch/kernels"
)

// Real messages for the seed corpus: an IPv4 ICMP echo request as a tunnel carries it, the RFC 8439
// sample text, a WireGuard keepalive (empty payload) and an MTU-sized payload.
func fuzzSeedMessages() [][]byte {
	icmp := []byte{
		0x45, 0x00, 0x00, 0x54, 0x3c, 0x1d, 0x40, 0x00, 0x40, 0x01, 0xe8, 0x47, 0x0a, 0x00, 0x00, 0x01,
		0x0a, 0x00, 0x00, 0x02, 0x08, 0x00, 0x4c, 0x5d, 0x00, 0x01, 0x00, 0x01,
	}
	for i := range 56 { // the ping(8) payload pattern
		icmp = append(icmp, byte(i))
	}
	mtu := make([]byte, 1420)
	for i := range mtu {
		mtu[i] = byte(i * 7)
	}
	return [][]byte{icmp, []byte(sunscreen), nil, mtu}
}

// fit stretches or cuts b to n bytes, mixing in salt, so any fuzzer input yields a usable key or
// nonce while distinct salts (op positions) still give distinct values.
func fit(b []byte, n int, salt byte) []byte {
	out := make([]byte, n)
	for i := range out {
		if len(b) > 0 {
			out[i] = b[i%len(b)]
		}
		out[i] ^= salt * byte(i/max(len(b), 1)+1)
	}
	return out
}

func FuzzSealOracle(f *testing.F) {
	for i, m := range fuzzSeedMessages() {
		f.Add(uint8(i), []byte("a key of any length will do"), []byte("nonce"), []byte("ad"), m, uint16(i*0x1357))
	}
	f.Add(uint8(2), []byte{}, []byte{}, []byte{}, make([]byte, 200), uint16(0xffff))
	// Batches of 64 and 24 ChaCha20-Poly1305 ops: the default path's lanes, and tiny ops beside them.
	f.Add(uint8(0x82), []byte("k"), []byte("n"), []byte("ad"), fuzzSeedMessages()[3], uint16(0xe007))
	f.Add(uint8(0x82), []byte("k"), []byte("n"), []byte{}, bytes.Repeat(fuzzSeedMessages()[0], 6), uint16(0x4007))
	paths := batchPaths()
	f.Fuzz(func(t *testing.T, suiteSel uint8, key, nonce, ad, msg []byte, split uint16) {
		if len(msg) > 1<<16 {
			return
		}
		// Up to 8 ops of rotating suites (of one suite from suiteSel 0x80 on); split's bits choose
		// where msg and ad are cut, and its top three repeat the ops up to 8 times, so that batches
		// of up to 64 ops reach the default path's routes for mid-sized and full batches.
		nOps := 1 + int(split%8)
		var ds []diffOp
		rest := msg
		for i := range nOps {
			s := allSuites[(int(suiteSel)+i)%len(allSuites)]
			if suiteSel >= 0x80 {
				s = allSuites[int(suiteSel)%len(allSuites)]
			}
			n := len(rest)
			if i < nOps-1 && n > 0 {
				n = int(split>>3+uint16(i)*0x9e37) % (n + 1)
			}
			d := diffOp{
				k:     newTestKey(t, s, fit(key, s.KeySize(), byte(i))),
				nonce: fit(nonce, s.NonceSize(), byte(i)),
				ad:    ad[:(int(split)+i)%(len(ad)+1)],
				pt:    rest[:n],
				offs:  [4]int{i % 8, (i + 1) % 8, int(split) % 8, (int(split) + i) % 8},
			}
			d.inPlace = (split>>uint(i))&1 == 1
			d.want = d.k.sealOracle(d.nonce, d.ad, d.pt)
			ds = append(ds, d)
			rest = rest[n:]
		}
		for range split >> 13 {
			ds = append(ds, ds[:nOps]...)
		}
		for _, path := range paths {
			ops := checkSeal(t, path, ds)
			open := make([]kernels.Op, len(ops))
			for i, op := range ops {
				open[i] = kernels.Op{Key: op.Key, Nonce: op.Nonce, AD: op.AD, Src: op.Dst, Dst: make([]byte, len(ds[i].pt)), Err: errSentinel}
			}
			if failed := path.Open(open); failed != 0 {
				t.Fatalf("%v: %d of %d sealed ops failed to open", path, failed, len(open))
			}
			for i := range open {
				if open[i].Err != nil || !bytes.Equal(open[i].Dst, ds[i].pt) {
					t.Fatalf("%v: op %d did not open to its plaintext", path, i)
				}
			}
		}
	})
}

// fuzzOpenKey is the fixed key FuzzOpen uses for suite s, so that seeds can be genuine ciphertexts.
func fuzzOpenKey(s kernels.Suite) []byte {
	return fit([]byte("wirebatch FuzzOpen key"), s.KeySize(), byte(s))
}

func FuzzOpen(f *testing.F) {
	for i, m := range fuzzSeedMessages() {
		for _, s := range allSuites {
			nonce := fit([]byte{byte(i)}, 24, byte(s)) // 24 bytes: FuzzOpen cuts it per suite
			ad := binary.LittleEndian.AppendUint32(nil, uint32(i))
			ct := oracleAEAD(f, s, fuzzOpenKey(s)).Seal(nil, nonce[:s.NonceSize()], m, ad)
			f.Add(nonce, ad, ct)
		}
	}
	f.Add([]byte{}, []byte{}, []byte{})
	f.Add(make([]byte, 24), []byte{}, make([]byte, 15))
	f.Add(make([]byte, 24), []byte{}, make([]byte, 16))
	f.Add(make([]byte, 24), []byte("ad"), bytes.Repeat([]byte{0xff}, 100))

	// Every suite, and the ChaCha family twice more: three ops of a suite in one batch make a
	// triple for the default path's fused kernels where this CPU has them.
	var keys []*testKey
	for _, s := range append(append([]kernels.Suite(nil), allSuites...), kernels.ChaCha20Poly1305, kernels.XChaCha20Poly1305,
		kernels.ChaCha20Poly1305, kernels.XChaCha20Poly1305) {
		keys = append(keys, newTestKey(f, s, fuzzOpenKey(s)))
	}
	paths := batchPaths()
	f.Fuzz(func(t *testing.T, nonce, ad, data []byte) {
		if len(nonce) < 24 {
			nonce = fit(nonce, 24, 0)
		}
		for _, path := range paths {
			ops := make([]kernels.Op, len(keys))
			genuine := make([][]byte, len(keys)) // the oracle's plaintext, nil if it rejects the input
			wantFailed := 0
			for i, k := range keys {
				n := nonce[:k.suite.NonceSize()]
				pt, err := k.oracle.Open(make([]byte, 0, len(data)), n, data, ad)
				if err == nil {
					genuine[i] = pt // non-nil even when empty
				} else {
					wantFailed++
				}
				op := kernels.Op{Key: k.key, Nonce: n, AD: ad, Src: data, Err: errSentinel}
				if len(data) >= kernels.TagSize {
					op.Dst = make([]byte, len(data)-kernels.TagSize)
					fill(op.Dst, guardByte)
				}
				ops[i] = op
			}
			if failed := path.Open(ops); failed != wantFailed {
				t.Fatalf("%v: Open failed %d of %d ops, the oracle rejects %d", path, failed, len(ops), wantFailed)
			}
			for i, op := range ops {
				if genuine[i] == nil {
					if op.Err != kernels.ErrAuth || !isZero(op.Dst) {
						t.Fatalf("%v %v: forged input: Err = %v, Dst zeroed = %v", path, keys[i].suite, op.Err, isZero(op.Dst))
					}
				} else if op.Err != nil || !bytes.Equal(op.Dst, genuine[i]) {
					t.Fatalf("%v %v: genuine ciphertext: Err = %v or plaintext differs from the oracle's", path, keys[i].suite, op.Err)
				}
			}
		}
	})
}
