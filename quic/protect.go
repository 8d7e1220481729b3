// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package quic

import (
	"encoding/binary"
	"sync"
	"sync/atomic"

	"github.com/wirebatch/wirebatch/kernels"
)

// Packet is one QUIC packet of a batch.
type Packet struct {
	// Buf is the packet. Seal: the unprotected header (first byte through the packet number) then
	// the plaintext, with cap(Buf) >= len(Buf)+16; on return the protected packet (len+16). Open:
	// the protected packet; on return the unprotected header then the plaintext (len-16).
	Buf []byte
	// PNOffset is the offset of the Packet Number field in Buf.
	PNOffset int
	// PN is the packet number. Seal: the full packet number (below 2^62), of which Seal writes the
	// low (first byte & 3)+1 bytes at PNOffset. Open: set to the decoded full packet number.
	PN uint64
	// Err is Open's verdict: nil, or ErrAuth.
	Err error
}

// maxPN is the packet number space's size (RFC 9000 section 12.3).
const maxPN = 1 << 62

// chunk is how many packets one pass of the kernels takes; a batch runs in chunks.
const chunk = 64

// scratch holds a chunk's AEAD ops, nonces and header-protection samples and masks, each slice as
// long as the chunks it serves. Made once and reused so that a batch allocates nothing: the ops
// reach the standard library's AEADs through interfaces, so stack copies of them would move to the
// heap. Batches take one from the pool, a batch of one packet the one its Keys hold (single).
type scratch struct {
	ops    []kernels.Op
	nonce  [][12]byte
	sample [][16]byte
	mask   [][16]byte
	pnLen  []int
}

func newScratch(n int) *scratch {
	return &scratch{ops: make([]kernels.Op, n), nonce: make([][12]byte, n), sample: make([][16]byte, n),
		mask: make([][16]byte, n), pnLen: make([]int, n)}
}

var scratches = sync.Pool{New: func() any { return newScratch(chunk) }}

// singleScratch is a Keys' scratch for batches of one packet, taken while busy is set: a
// compare-and-swap costs a batch of one less than the pool's round trip, which is a few percent of
// a full-size packet's time. A batch of one that finds it taken (another goroutine's) uses the pool.
type singleScratch struct {
	busy atomic.Bool
	s    *scratch
}

// getScratch returns a scratch for n packets; putScratch gives it back once wiped.
func (k *Keys) getScratch(n int) *scratch {
	if n == 1 && k.single.busy.CompareAndSwap(false, true) {
		return k.single.s
	}
	return scratches.Get().(*scratch)
}

func (k *Keys) putScratch(s *scratch) {
	if s == k.single.s {
		k.single.busy.Store(false) // pairs with the CompareAndSwap of the next getScratch
		return
	}
	scratches.Put(s)
}

// chunkScratch is a chunk's share of a scratch, n of each, in local slices: the loops then index
// slices whose length the compiler knows instead of reloading the scratch's.
type chunkScratch struct {
	ops    []kernels.Op
	nonce  [][12]byte
	sample [][16]byte
	mask   [][16]byte
	pnLen  []int
}

// take points c at the first n of each of s's slices. It fills c in place: a chunkScratch returned
// by value is built on the stack and copied in 16-byte moves, each of which waits for the two
// 8-byte stores it spans (a few nanoseconds, which a packet on its own pays whole).
func (c *chunkScratch) take(s *scratch, n int) {
	c.ops, c.nonce, c.sample, c.mask, c.pnLen = s.ops[:n], s.nonce[:n], s.sample[:n], s.mask[:n], s.pnLen[:n]
}

// setOp fills ops[i], whose nonce is nonce[i], field by field: a composite literal is built on the
// stack and copied over in 16-byte moves, each of which would wait for the two 8-byte stores it
// spans. Err is left as it is: Seal does not read it, and Open sets it on every op.
func (c *chunkScratch) setOp(i int, key *kernels.Key, ad, src, dst []byte) {
	op := &c.ops[i]
	op.Key = key
	op.Nonce = c.nonce[i][:]
	op.AD, op.Src, op.Dst = ad, src, dst
}

// wipeInline is the largest chunk that wipe clears with inline stores: for a few packets the calls
// to clear cost more than the stores themselves; for more, clear's wide stores win.
const wipeInline = 4

// wipe clears the chunk's secrets: the nonces (with the packet number, which the wire carries, they
// give away the IV) and the masks. The samples are ciphertext, public already. The ops keep their
// references to the caller's buffers and keys until the next chunk overwrites them or the pool
// drops the scratch at a garbage collection: clearing 64 of them cost an ACK-sized packet 2-7% of
// its time (docs/experiments.md, 2026-12-03 seventh session), and the keys they reference are
// wiped by Destroy as the Keys' own are.
func (c *chunkScratch) wipe() {
	if len(c.nonce) > wipeInline {
		clear(c.nonce)
		clear(c.mask)
		return
	}
	for i := range c.nonce {
		c.nonce[i] = [12]byte{}
		c.mask[i] = [16]byte{}
	}
}

// Seal protects every packet: AEAD with the nonce IV XOR PN and the header as associated data (RFC
// 9001 section 5.3), then header protection (section 5.4). Misuse (nil or destroyed keys, a packet
// too short for the sample, cap(Buf) < len(Buf)+16, PNOffset < 1, PN >= 2^62) panics before any
// packet is touched.
func (k *Keys) Seal(pkts []Packet) {
	if len(pkts) == 0 {
		return
	}
	k.mustBeLive()
	for i := range pkts {
		p := &pkts[i]
		switch {
		case p.PNOffset < 1 || len(p.Buf) < p.PNOffset+4:
			panic("quic: Seal needs PNOffset >= 1 and len(Buf) >= PNOffset+4 (the header-protection sample)")
		case cap(p.Buf) < len(p.Buf)+kernels.TagSize:
			panic("quic: Seal needs cap(Buf) >= len(Buf)+16 for the tag")
		case p.PN >= maxPN:
			panic("quic: packet number past 2^62")
		}
	}
	s := k.getScratch(len(pkts))
	for len(pkts) > 0 {
		n := min(len(pkts), chunk)
		k.sealChunk(pkts[:n], s)
		pkts = pkts[n:]
	}
	k.putScratch(s)
}

func (k *Keys) sealChunk(pkts []Packet, sc *scratch) {
	var s chunkScratch
	s.take(sc, len(pkts))
	for i := range pkts {
		p := &pkts[i]
		pnLen := int(p.Buf[0]&3) + 1
		hdr := p.PNOffset + pnLen
		// The packet number's low bytes, big endian (RFC 9000 section 17.1), written with the
		// bytes after them in one word (len(Buf) >= PNOffset+4).
		f := pnField(pnLen)
		w := binary.BigEndian.Uint32(p.Buf[p.PNOffset:])
		binary.BigEndian.PutUint32(p.Buf[p.PNOffset:], w&^f|uint32(p.PN)<<(32-8*pnLen)&f)
		k.nonce(&s.nonce[i], p.PN)
		m := len(p.Buf)
		s.setOp(i, k.aead, p.Buf[:hdr], p.Buf[hdr:m], p.Buf[hdr:m+kernels.TagSize])
		p.Buf = p.Buf[:m+kernels.TagSize]
	}
	kernels.Seal(s.ops)
	for i := range pkts {
		p := &pkts[i]
		s.sample[i] = [16]byte(p.Buf[p.PNOffset+4:])
	}
	k.hp.EncryptBlocks(s.mask, s.sample)
	for i := range pkts {
		p := &pkts[i]
		applyMask(p.Buf, p.PNOffset, int(p.Buf[0]&3)+1, &s.mask[i])
	}
	s.wipe()
}

// Open removes header protection, decodes each packet number against largest (the largest packet
// number processed in this packet number space, -1 if none; RFC 9000 appendix A.3; largest is not
// advanced within the batch), then authenticates and decrypts. It sets every packet's Err and
// returns how many failed. A packet shorter than PNOffset+20 fails. A failed packet keeps its
// protected header and length, and its payload is zeroed: no unauthenticated plaintext remains.
// Nil or destroyed keys panic.
func (k *Keys) Open(pkts []Packet, largest int64) (failed int) {
	if len(pkts) == 0 {
		return 0
	}
	k.mustBeLive()
	s := k.getScratch(len(pkts))
	for len(pkts) > 0 {
		n := min(len(pkts), chunk)
		failed += k.openChunk(pkts[:n], largest, s)
		pkts = pkts[n:]
	}
	k.putScratch(s)
	return failed
}

func (k *Keys) openChunk(pkts []Packet, largest int64, sc *scratch) (failed int) {
	var s chunkScratch
	s.take(sc, len(pkts))
	// Samples of the packets long enough for one; the others fail now and take no lane.
	for i := range pkts {
		p := &pkts[i]
		if p.PNOffset < 1 || len(p.Buf) < p.PNOffset+20 {
			p.Err, p.PN = ErrAuth, 0
			s.sample[i] = [16]byte{}
			continue
		}
		p.Err = nil
		s.sample[i] = [16]byte(p.Buf[p.PNOffset+4:])
	}
	k.hp.EncryptBlocks(s.mask, s.sample)
	ops := 0
	for i := range pkts {
		p := &pkts[i]
		if p.Err != nil {
			continue
		}
		pnLen, word := removeMask(p.Buf, p.PNOffset, &s.mask[i])
		s.pnLen[i] = pnLen
		p.PN = decodePN(largest, uint64(word>>(32-8*pnLen)), pnLen)
		k.nonce(&s.nonce[ops], p.PN)
		hdr, m := p.PNOffset+pnLen, len(p.Buf)
		s.setOp(ops, k.aead, p.Buf[:hdr], p.Buf[hdr:m], p.Buf[hdr:m-kernels.TagSize])
		// Trimmed now, put back below if the tag fails: a batch whose packets all authenticate
		// needs no pass over them after the kernels.
		p.Buf = p.Buf[:m-kernels.TagSize]
		ops++
	}
	failed = len(pkts) - ops
	if authFailed := kernels.Open(s.ops[:ops]); authFailed > 0 {
		failed += authFailed
		op := 0
		for i := range pkts {
			p := &pkts[i]
			if p.Err != nil {
				continue // too short for a sample
			}
			if s.ops[op].Err != nil {
				// Restore the packet as received: the payload is zeroed already (kernels.Open).
				p.Buf = p.Buf[:len(p.Buf)+kernels.TagSize]
				applyMask(p.Buf, p.PNOffset, s.pnLen[i], &s.mask[i])
				p.Err = ErrAuth
				p.PN = 0
			}
			op++
		}
	}
	s.wipe()
	return failed
}

// nonce writes the AEAD nonce of packet number pn: the IV XOR the packet number, left-padded to
// the IV's length (RFC 9001 section 5.3).
func (k *Keys) nonce(out *[12]byte, pn uint64) {
	// From k.iv, not from out after copying the IV there: a load spanning two fresh stores would
	// wait for them to retire.
	copy(out[:4], k.iv[:4])
	binary.BigEndian.PutUint64(out[4:], binary.BigEndian.Uint64(k.iv[4:])^pn)
}

// headerBits is the mask of the first byte's protected bits: the low 4 of a long header (form bit
// set), the low 5 of a short one (RFC 9001 section 5.4.1).
func headerBits(first byte) byte {
	if first&0x80 != 0 {
		return 0x0f
	}
	return 0x1f
}

// pnField is the mask of a pnLen-byte packet number field in the big-endian word of the 4 bytes
// that start at it.
func pnField(pnLen int) uint32 { return ^uint32(0) << (32 - 8*pnLen) }

// applyMask protects (or, applied again, unprotects) a header whose first byte is in the clear:
// the first byte's protected bits and the pnLen packet-number bytes at off (RFC 9001 section
// 5.4.1), these in one word: buf holds at least 4 bytes at off.
func applyMask(buf []byte, off, pnLen int, mask *[16]byte) {
	buf[0] ^= mask[0] & headerBits(buf[0])
	maskPN(buf[off:], pnLen, mask)
}

// removeMask unprotects a protected header and returns its packet-number length and the 4 bytes
// at off, the packet number as sent first: the first byte first, which tells how many
// packet-number bytes to unmask (RFC 9001 section 5.4.2). Both come from registers, not from
// reloading the bytes just stored. Small enough to inline in openChunk's loop, where a call cost
// an ACK-sized packet about 3% of its time.
func removeMask(buf []byte, off int, mask *[16]byte) (pnLen int, word uint32) {
	first := buf[0]
	first ^= mask[0] & headerBits(first) // the form bit is not protected
	buf[0] = first
	pnLen = int(first&3) + 1
	return pnLen, maskPN(buf[off:], pnLen, mask)
}

// maskPN XORs mask[1:1+pnLen] into the packet number field at pn[0:pnLen] and returns the 4 bytes
// at pn as a big-endian word.
func maskPN(pn []byte, pnLen int, mask *[16]byte) uint32 {
	w := binary.BigEndian.Uint32(pn) ^ binary.BigEndian.Uint32(mask[1:])&pnField(pnLen)
	binary.BigEndian.PutUint32(pn, w)
	return w
}

// decodePN recovers a full packet number from its pnLen low bytes, the one closest to largest+1
// (RFC 9000 appendix A.3), within 0 .. 2^62-1.
func decodePN(largest int64, truncated uint64, pnLen int) uint64 {
	expected := uint64(largest + 1)
	win := uint64(1) << (8 * pnLen)
	hwin := win / 2
	candidate := expected&^(win-1) | truncated
	switch {
	case candidate+hwin <= expected && candidate < maxPN-win:
		return candidate + win
	case candidate > expected+hwin && candidate >= win:
		return candidate - win
	}
	return candidate
}
