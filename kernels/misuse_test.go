// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package kernels_test

// Misuse panics. Like cipher.AEAD, Seal and Open panic on programming errors (as opposed to forged
// input, which is a failed Open): nil or destroyed key, wrong nonce size, wrong Dst length, Dst
// overlapping Src other than exactly in place, AD overlapping Dst. The check runs before any op is
// processed, so a batch that panics has written nothing: a valid op ahead of the bad one must find
// its Dst untouched.

import (
	"slices"
	"testing"

	"github.com/wirebatch/wirebatch/kernels"
)

// misuseCase builds one bad op from a valid key of suite s.
type misuseCase struct {
	name string
	open bool
	bad  func(t *testing.T, s kernels.Suite, k *kernels.Key) kernels.Op
}

const misuseLen = 40 // message length of the bad ops: several blocks, not a multiple of 16

var misuseCases = []misuseCase{
	{"nil key/Seal", false, func(t *testing.T, s kernels.Suite, k *kernels.Key) kernels.Op {
		op := validSealOp(s, k)
		op.Key = nil
		return op
	}},
	{"nil key/Open", true, func(t *testing.T, s kernels.Suite, k *kernels.Key) kernels.Op {
		op := validOpenOp(s, k)
		op.Key = nil
		return op
	}},
	{"destroyed key/Seal", false, func(t *testing.T, s kernels.Suite, _ *kernels.Key) kernels.Op {
		d := destroyedKey(t, s)
		return validSealOp(s, d)
	}},
	{"destroyed key/Open", true, func(t *testing.T, s kernels.Suite, _ *kernels.Key) kernels.Op {
		d := destroyedKey(t, s)
		return validOpenOp(s, d)
	}},
	{"nonce one byte short/Seal", false, func(t *testing.T, s kernels.Suite, k *kernels.Key) kernels.Op {
		op := validSealOp(s, k)
		op.Nonce = op.Nonce[:s.NonceSize()-1]
		return op
	}},
	{"nonce one byte long/Open", true, func(t *testing.T, s kernels.Suite, k *kernels.Key) kernels.Op {
		op := validOpenOp(s, k)
		op.Nonce = make([]byte, s.NonceSize()+1)
		return op
	}},
	{"nonce of the other ChaCha size/Seal", false, func(t *testing.T, s kernels.Suite, k *kernels.Key) kernels.Op {
		op := validSealOp(s, k)
		op.Nonce = make([]byte, 36-s.NonceSize()) // 24 for the 12-byte suites, 12 for XChaCha20
		return op
	}},
	{"nil nonce/Open", true, func(t *testing.T, s kernels.Suite, k *kernels.Key) kernels.Op {
		op := validOpenOp(s, k)
		op.Nonce = nil
		return op
	}},
	{"nil nonce, short ciphertext/Open", true, func(t *testing.T, s kernels.Suite, k *kernels.Key) kernels.Op {
		// Misuse is checked before the short-ciphertext rule turns the op into a failed Open.
		return kernels.Op{Key: k, Src: make([]byte, 3)}
	}},
	{"Seal Dst one byte short", false, func(t *testing.T, s kernels.Suite, k *kernels.Key) kernels.Op {
		op := validSealOp(s, k)
		op.Dst = op.Dst[:len(op.Dst)-1]
		return op
	}},
	{"Seal Dst without room for the tag", false, func(t *testing.T, s kernels.Suite, k *kernels.Key) kernels.Op {
		op := validSealOp(s, k)
		op.Dst = op.Dst[:len(op.Src)]
		return op
	}},
	{"Seal Dst one byte long", false, func(t *testing.T, s kernels.Suite, k *kernels.Key) kernels.Op {
		op := validSealOp(s, k)
		op.Dst = make([]byte, len(op.Src)+kernels.TagSize+1)
		return op
	}},
	{"Seal nil Dst, empty Src", false, func(t *testing.T, s kernels.Suite, k *kernels.Key) kernels.Op {
		return kernels.Op{Key: k, Nonce: make([]byte, s.NonceSize())}
	}},
	{"Open Dst one byte short", true, func(t *testing.T, s kernels.Suite, k *kernels.Key) kernels.Op {
		op := validOpenOp(s, k)
		op.Dst = op.Dst[:len(op.Dst)-1]
		return op
	}},
	{"Open Dst as long as Src", true, func(t *testing.T, s kernels.Suite, k *kernels.Key) kernels.Op {
		op := validOpenOp(s, k)
		op.Dst = make([]byte, len(op.Src))
		return op
	}},
	{"Seal Dst one byte after Src's start", false, func(t *testing.T, s kernels.Suite, k *kernels.Key) kernels.Op {
		op := validSealOp(s, k)
		buf := make([]byte, 1+misuseLen+kernels.TagSize)
		op.Src, op.Dst = buf[:misuseLen], buf[1:]
		return op
	}},
	{"Seal Dst ending inside Src", false, func(t *testing.T, s kernels.Suite, k *kernels.Key) kernels.Op {
		op := validSealOp(s, k)
		buf := make([]byte, 8+misuseLen+kernels.TagSize)
		op.Src, op.Dst = buf[8+kernels.TagSize:], buf[:misuseLen+kernels.TagSize] // Dst runs 32 bytes into Src
		return op
	}},
	{"Open Dst one byte after Src's start", true, func(t *testing.T, s kernels.Suite, k *kernels.Key) kernels.Op {
		op := validOpenOp(s, k)
		buf := make([]byte, misuseLen+kernels.TagSize)
		copy(buf, op.Src)
		op.Src, op.Dst = buf, buf[1:1+misuseLen]
		return op
	}},
	{"Open Dst before Src, overlapping", true, func(t *testing.T, s kernels.Suite, k *kernels.Key) kernels.Op {
		op := validOpenOp(s, k)
		buf := make([]byte, 4+misuseLen+kernels.TagSize)
		copy(buf[4:], op.Src)
		op.Src, op.Dst = buf[4:], buf[:misuseLen]
		return op
	}},
	{"Seal AD inside Dst", false, func(t *testing.T, s kernels.Suite, k *kernels.Key) kernels.Op {
		op := validSealOp(s, k)
		op.AD = op.Dst[misuseLen : misuseLen+4] // where the tag goes
		return op
	}},
	{"Seal AD inside Dst, in place", false, func(t *testing.T, s kernels.Suite, k *kernels.Key) kernels.Op {
		op := validSealOp(s, k)
		buf := make([]byte, misuseLen+kernels.TagSize)
		op.Src, op.Dst, op.AD = buf[:misuseLen], buf, buf[2:6] // AD inside the plaintext being overwritten
		return op
	}},
	{"Open AD overlapping Dst", true, func(t *testing.T, s kernels.Suite, k *kernels.Key) kernels.Op {
		op := validOpenOp(s, k)
		op.AD = op.Dst[len(op.Dst)-1:]
		return op
	}},
}

func validSealOp(s kernels.Suite, k *kernels.Key) kernels.Op {
	return kernels.Op{Key: k, Nonce: make([]byte, s.NonceSize()), AD: []byte("ad"),
		Src: make([]byte, misuseLen), Dst: make([]byte, misuseLen+kernels.TagSize)}
}

// validOpenOp returns a well-formed Open op (its tag need not verify: only the shape matters).
func validOpenOp(s kernels.Suite, k *kernels.Key) kernels.Op {
	return kernels.Op{Key: k, Nonce: make([]byte, s.NonceSize()), AD: []byte("ad"),
		Src: make([]byte, misuseLen+kernels.TagSize), Dst: make([]byte, misuseLen)}
}

func destroyedKey(t *testing.T, s kernels.Suite) *kernels.Key {
	d, err := kernels.NewKey(s, make([]byte, s.KeySize()))
	if err != nil {
		t.Fatal(err)
	}
	d.Destroy()
	return d
}

// callers are the entry points under test: every tier and the package-level functions.
func misuseCallers() []struct {
	name string
	seal func([]kernels.Op)
	open func([]kernels.Op) int
} {
	cs := []struct {
		name string
		seal func([]kernels.Op)
		open func([]kernels.Op) int
	}{{"package", kernels.Seal, kernels.Open}}
	for _, tier := range kernels.Tiers() {
		cs = append(cs, struct {
			name string
			seal func([]kernels.Op)
			open func([]kernels.Op) int
		}{tier.String(), tier.Seal, tier.Open})
	}
	return cs
}

func TestMisusePanics(t *testing.T) {
	r := newRand(t)
	for _, c := range misuseCallers() {
		t.Run(c.name, func(t *testing.T) {
			for _, s := range allSuites {
				k := newTestKey(t, s, randBytes(r, s.KeySize()))
				for _, mc := range misuseCases {
					// The bad op alone, and last behind valid ops of every suite.
					for _, ahead := range []int{0, 5} {
						var ops []kernels.Op
						for i := range ahead {
							gs := allSuites[i%len(allSuites)]
							gk := newTestKey(t, gs, randBytes(r, gs.KeySize()))
							op := validSealOp(gs, gk.key)
							if mc.open {
								op.Src = gk.sealOracle(op.Nonce, op.AD, op.Src)
								op.Dst = op.Dst[:misuseLen]
								op.Err = errSentinel
							}
							fill(op.Dst, guardByte)
							ops = append(ops, op)
						}
						ops = append(ops, mc.bad(t, s, k.key))
						what := c.name + " " + s.String() + " " + mc.name
						if mc.open {
							expectPanic(t, what, func() { c.open(ops) })
						} else {
							expectPanic(t, what, func() { c.seal(ops) })
						}
						for i := range ahead {
							if !isFilled(ops[i].Dst, guardByte) || (mc.open && ops[i].Err != errSentinel) {
								t.Errorf("%s: op %d ahead of the bad one was processed before the panic", what, i)
							}
						}
					}
				}
			}
		})
	}
}

// TestNotMisuse pins down the edge cases that are allowed and must not panic: exact in-place
// operation, empty messages, AD equal to Src (AD may overlap Src, only not Dst), nil AD, and a
// ciphertext shorter than a tag (a failed Open with any Dst, which is zeroed).
func TestNotMisuse(t *testing.T) {
	r := newRand(t)
	for _, c := range misuseCallers() {
		for _, s := range allSuites {
			k := newTestKey(t, s, randBytes(r, s.KeySize()))
			nonce := randBytes(r, s.NonceSize())
			pt := randBytes(r, misuseLen)

			buf := make([]byte, misuseLen+kernels.TagSize)
			copy(buf, pt)
			empty := make([]byte, kernels.TagSize)
			adSrc := slices.Clone(pt)
			adDst := make([]byte, misuseLen+kernels.TagSize)
			seal := []kernels.Op{
				{Key: k.key, Nonce: nonce, AD: nil, Src: buf[:misuseLen], Dst: buf}, // in place
				{Key: k.key, Nonce: nonce, AD: nil, Src: nil, Dst: empty},           // empty message
				{Key: k.key, Nonce: nonce, AD: adSrc, Src: adSrc, Dst: adDst},       // AD is Src
				{Key: k.key, Nonce: nonce, AD: pt[:0], Src: pt[:1], Dst: make([]byte, 1+kernels.TagSize)},
			}
			c.seal(seal)
			for i, want := range [][]byte{
				k.sealOracle(nonce, nil, pt), k.sealOracle(nonce, nil, nil),
				k.sealOracle(nonce, pt, pt), k.sealOracle(nonce, nil, pt[:1]),
			} {
				if !slices.Equal(seal[i].Dst, want) {
					t.Errorf("%s %v: edge-case Seal op %d differs from the oracle", c.name, s, i)
				}
			}

			short := make([]byte, 5)
			fill(short, guardByte)
			open := []kernels.Op{
				{Key: k.key, Nonce: nonce, Src: buf, Dst: buf[:misuseLen], Err: errSentinel},             // in place
				{Key: k.key, Nonce: nonce, Src: empty, Dst: empty[:0], Err: errSentinel},                 // empty message
				{Key: k.key, Nonce: nonce, Src: empty[:kernels.TagSize-1], Dst: short, Err: errSentinel}, // short
				{Key: k.key, Nonce: nonce, Src: nil, Dst: nil, Err: errSentinel},                         // no ciphertext at all
			}
			if failed := c.open(open); failed != 2 {
				t.Errorf("%s %v: edge-case Open failed %d ops, want 2 (the short ones)", c.name, s, failed)
			}
			if open[0].Err != nil || !slices.Equal(open[0].Dst, pt) || open[1].Err != nil {
				t.Errorf("%s %v: in-place or empty Open did not succeed: %v, %v", c.name, s, open[0].Err, open[1].Err)
			}
			if open[2].Err != kernels.ErrAuth || !isZero(short) || open[3].Err != kernels.ErrAuth {
				t.Errorf("%s %v: short ciphertext: Err = %v, %v, Dst %x; want ErrAuth and zeroes", c.name, s, open[2].Err, open[3].Err, short)
			}
			// Each short op alone too: a batch of one takes paths of its own (runAlone).
			for _, op := range open[2:] {
				fill(short, guardByte)
				alone := []kernels.Op{{Key: k.key, Nonce: nonce, Src: op.Src, Dst: op.Dst, Err: errSentinel}}
				if failed := c.open(alone); failed != 1 || alone[0].Err != kernels.ErrAuth || !isZero(short[:len(op.Dst)]) {
					t.Errorf("%s %v: short ciphertext of %d bytes alone: failed %d, Err %v; want 1, ErrAuth and zeroes",
						c.name, s, len(op.Src), failed, alone[0].Err)
				}
			}
		}
	}
	// An empty batch is a no-op.
	kernels.Seal(nil)
	if failed := kernels.Open(nil); failed != 0 {
		t.Errorf("Open(nil) = %d", failed)
	}
}

// TestUnavailableTierPanics: running a tier this CPU or build lacks must panic rather than fault on an
// illegal instruction.
func TestUnavailableTierPanics(t *testing.T) {
	available := kernels.Tiers()
	for _, tier := range []kernels.Tier{kernels.Generic, kernels.AVX2, kernels.AVX512, kernels.Stdlib, 4, 200} {
		if slices.Contains(available, tier) {
			continue
		}
		expectPanic(t, "Seal on "+tier.String(), func() { tier.Seal(nil) })
		expectPanic(t, "Open on "+tier.String(), func() { tier.Open(nil) })
	}
}

// TestZeroKeyPanics: a Key that did not come from NewKey (the zero value) is misuse like a nil one.
// Its suite is 0, whose NonceSize is 0, so an empty nonce passes the nonce check; if nothing else
// rejects it, no suite family takes the op and Open reports success (failed 0, Err untouched) with
// whatever Dst held as "plaintext".
func TestZeroKeyPanics(t *testing.T) {
	for _, c := range misuseCallers() {
		dst := []byte("not authenticated")
		open := []kernels.Op{{Key: new(kernels.Key), Src: make([]byte, len(dst)+kernels.TagSize), Dst: dst, Err: errSentinel}}
		expectPanic(t, c.name+" Open with a zero Key", func() { c.open(open) })
		seal := []kernels.Op{{Key: new(kernels.Key), Src: make([]byte, 4), Dst: make([]byte, 4+kernels.TagSize)}}
		expectPanic(t, c.name+" Seal with a zero Key", func() { c.seal(seal) })
	}
}
