// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package kernels

import (
	"crypto/subtle"
	"encoding/binary"
)

// Portable AES-GCM: counter mode through crypto/aes's block function and the constant-time GHASH of
// ghash_generic.go.

// gcmScratchBlocks is how many counter blocks the Generic tier encrypts before XORing them in.
const gcmScratchBlocks = 16

// gcmScratch holds the counter and key-stream blocks of one Generic-tier call. It lives on the heap
// because cipher.Block is an interface (its arguments escape), and it is recycled through a bounded
// free list rather than a sync.Pool so that the garbage collector never empties it: the steady state
// allocates nothing.
type gcmScratch struct {
	j0      [16]byte
	tagMask [16]byte
	tag     [16]byte
	ks      [gcmScratchBlocks * 16]byte
}

var gcmScratchFree = make(chan *gcmScratch, 64)

func getGCMScratch() *gcmScratch {
	select {
	case sc := <-gcmScratchFree:
		return sc
	default:
		return new(gcmScratch)
	}
}

// putGCMScratch wipes sc (it held key stream) and keeps it if the free list has room.
func putGCMScratch(sc *gcmScratch) {
	*sc = gcmScratch{}
	select {
	case gcmScratchFree <- sc:
	default:
	}
}

// gcmOpGeneric seals or opens one op with the portable code and reports whether it succeeded.
func gcmOpGeneric(op *Op, open bool, sc *gcmScratch) bool {
	if open && len(op.Src) < TagSize {
		failOpen(op)
		return false
	}
	g := op.Key.gcm
	// J0 = IV || 0^31 || 1 for a 96-bit IV (section 7.1, step 2); E_K(J0) masks the tag.
	copy(sc.j0[:12], op.Nonce)
	binary.BigEndian.PutUint32(sc.j0[12:], 1)
	g.block.Encrypt(sc.tagMask[:], sc.j0[:])

	if !open {
		n := len(op.Src)
		gcmCTR(g, sc, op.Dst[:n], op.Src, 2)
		gcmTag(g, sc, op.AD, op.Dst[:n], op.Dst[n:])
		return true
	}
	n := len(op.Src) - TagSize
	gcmTag(g, sc, op.AD, op.Src[:n], sc.tag[:])
	if subtle.ConstantTimeCompare(sc.tag[:], op.Src[n:]) != 1 {
		failOpen(op)
		return false
	}
	gcmCTR(g, sc, op.Dst, op.Src[:n], 2)
	op.Err = nil
	return true
}

// gcmTag writes E_K(J0) XOR GHASH(ad, ciphertext) to tag (section 7.1, steps 5-6).
func gcmTag(g *gcmKey, sc *gcmScratch, ad, ciphertext, tag []byte) {
	var y ghashElem
	g.h.updatePadded(&y, ad)
	g.h.updatePadded(&y, ciphertext)
	var lengths [16]byte
	binary.BigEndian.PutUint64(lengths[0:], uint64(len(ad))*8)
	binary.BigEndian.PutUint64(lengths[8:], uint64(len(ciphertext))*8)
	g.h.update(&y, lengths[:])
	y.store(tag)
	subtle.XORBytes(tag, tag, sc.tagMask[:])
}

// gcmCTR XORs src with the GCTR key stream whose first counter block is J0 with its low 32 bits set
// to counter (section 6.5). The counter wraps modulo 2^32 as inc32 specifies (section 6.2).
func gcmCTR(g *gcmKey, sc *gcmScratch, dst, src []byte, counter uint32) {
	for len(src) > 0 {
		nblocks := min((len(src)+15)/16, gcmScratchBlocks)
		for j := range nblocks {
			b := sc.ks[16*j : 16*j+16]
			copy(b[:12], sc.j0[:12])
			binary.BigEndian.PutUint32(b[12:], counter)
			counter++
			g.block.Encrypt(b, b)
		}
		n := subtle.XORBytes(dst, src, sc.ks[:16*nblocks])
		dst, src = dst[n:], src[n:]
	}
}
