// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package kernels

import (
	"crypto/aes"
	"crypto/cipher"
)

// The AES-GCM family (NIST SP 800-38D) with 96-bit IVs and 128-bit tags.
//
// Per op, every tier computes the same steps (SP 800-38D section 7.1):
//
//	H   = E_K(0^128)                            (precomputed in the Key)
//	J0  = IV || 0^31 || 1
//	C   = P XOR E_K(inc32(J0)), E_K(inc32^2(J0)), ...       (GCTR, section 6.5)
//	tag = E_K(J0) XOR GHASH_H(A || pad || C || pad || be64(bits A) || be64(bits C))
//
// Open recomputes the tag from the ciphertext and compares it in constant time before it decrypts
// anything; a failed op's Dst is zeroed.

// gcmKey is the AES-GCM part of a Key.
type gcmKey struct {
	// block is crypto/aes's block function, used by the Generic tier. Its round keys live inside
	// crypto/aes, which offers no way to wipe them: Destroy drops the reference instead.
	block cipher.Block
	// h is the GHASH key in the Generic tier's representation.
	h ghashKey
	// asm is what the assembly tiers of this build need (round keys, powers of H); empty where there
	// are none.
	asm gcmAsmKey
}

func newGCMKey(key []byte) (*gcmKey, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	g := &gcmKey{block: block}
	var h [16]byte
	block.Encrypt(h[:], h[:])
	g.h = newGHASHKey(h[:])
	clear(h[:])
	g.asm.init(key, &g.h)
	return g, nil
}

func (g *gcmKey) destroy() {
	g.h = ghashKey{}
	g.block = nil
	g.asm.destroy()
}

// gcmRun processes the AES-GCM ops of ops on tier t and returns how many Opens failed. The tier that
// actually runs is the first on t's fallback chain with AES-GCM code (gcmHas, per build).
func gcmRun(t Tier, ops []Op, open bool) (failed int) {
	return gcmRunTier(t.runsOn(gcmHas), ops, open)
}

// gcmRunGeneric processes the AES-GCM ops of ops with the portable code.
func gcmRunGeneric(ops []Op, open bool) (failed int) {
	var sc *gcmScratch
	for i := range ops {
		op := &ops[i]
		if !op.Key.suite.isGCM() {
			continue
		}
		if sc == nil {
			sc = getGCMScratch()
		}
		if !gcmOpGeneric(op, open, sc) {
			failed++
		}
	}
	if sc != nil {
		putGCMScratch(sc)
	}
	return failed
}
