//go:build gc && !purego

package kernels

import (
	"crypto/subtle"
	"encoding/binary"
	"math/bits"
	"unsafe"
)

// The few-ops path: with fewer ops than lanes, one op per lane would leave most lanes idle, so the
// lanes share out the blocks of each message instead.
//
// On AVX512 (chachaOneOp, one op at a time, no lane tables):
//
//	ChaCha20   chachaOne16 broadcasts the message's state to 16 lanes, lane j running block 16k+j,
//	           and masks the last partial block; the first pass (block 0 for the Poly1305 key and
//	           the first blocks) is chachaKS24 (24 blocks, two states in flight) or a 16-, 8- or
//	           4-block key-stream pass, whichever covers the message.
//	Poly1305   poly1305IFMAOne: 8 lanes on the message's blocks, lane j absorbing blocks 8k+j with
//	           multiplier r^8, and r^(8-j) at its last one, so that the lanes' sum is the Horner
//	           evaluation of those blocks (RFC 8439 section 2.5); the blocks left over run one at a
//	           time. Powers of r come from poly1305Mul44. Short MACs use the portable radix-2^64 Poly1305
//	           (poly1305AEAD).
//
// On AVX2 (runFew, through the lane tables):
//
//	ChaCha20   16 lanes on one message: lane j runs blocks 1+j, 17+j, ... (counter step 16, pointer
//	           step 1 KiB). The blocks left over (block 0 for the Poly1305 key, the last < 16 whole
//	           blocks, the partial block) are packed, from all the chunk's ops, one per lane into
//	           further calls.
//	Poly1305   8 lanes on one message's whole ciphertext blocks as above; the AD before them and the
//	           blocks after them run in lane 0.
//
// chachaFewOps is the largest batch (chunk, on AVX2) that takes this path: up to there it costs less
// than one op per lane (for 1420-byte messages, 1.5 ChaCha20 calls per op against 24 blocks per
// lane).
const chachaFewOps = 7

// chachaShortMAC is the longest AD plus ciphertext whose tag chachaOneOp computes with the scalar
// Poly1305 (poly1305AEAD): for a few blocks it beats setting up the vector lanes.
const chachaShortMAC = 64

// chachaZeros is the source of pure key stream: chachaOne16 XORs it into a buffer. Never written.
var chachaZeros [1024]byte

// chachaOneOp seals or opens op on its own on the AVX512 tier and reports whether it succeeded.
// Open authenticates before it decrypts, like every path.
func chachaOneOp(op *Op, open bool) bool {
	n := len(op.Src)
	if open {
		n -= TagSize
	}
	if 64+n <= 4*64 && len(op.AD)+n <= chachaShortMAC {
		return chachaTinyOp(op, open, n)
	}
	var st [16]uint32 // the ChaCha20 state (RFC 8439 section 2.3)
	var sub [8]uint32
	key, nonce := chachaOpKey(op, &sub)
	st[0], st[1], st[2], st[3] = sigma0, sigma1, sigma2, sigma3
	copy(st[4:12], key[:])
	st[13], st[14], st[15] = nonce[0], nonce[1], nonce[2]
	src, dst := op.Src[:n], op.Dst[:n]

	// Block 0 (the Poly1305 key) and the key stream of the first bytes in one pass: blocks 0-23 when
	// that covers the message (two states in flight), else 0-15 (or 0-7 or 0-3 when the message
	// ends there).
	// A message of up to three blocks gets a small buffer: zeroing and wiping the large one would
	// cost about as much as its key stream.
	var ks []byte
	first := 16 * 64
	if 64+n <= 4*64 {
		var small [4 * 64]byte
		ks, first = small[:], len(small)
		chachaKS4(&st, &small)
	} else {
		var large [24 * 64]byte
		ks = large[:]
		if n > first-64 && n <= len(large)-64 {
			first = len(large)
			chachaKS24(&st, &large)
		} else {
			chachaKeyStream(&st, large[:min(64+n, first)])
		}
	}
	var polyKey [32]byte
	copy(polyKey[:], ks[:32])

	mac := func(ct []byte) (tag [TagSize]byte) {
		if len(op.AD)+len(ct) <= chachaShortMAC {
			return poly1305AEAD(op.AD, ct, &polyKey)
		}
		if chachaIFMA {
			return poly1305One(op.AD, ct, &polyKey)
		}
		var p polyLanes
		p.radix26 = true
		return p.single(op.AD, ct, &polyKey)
	}
	ok := true
	if open {
		tag := mac(src)
		ok = chachaFinishTag(op, n, true, &tag)
	}
	if ok {
		m := min(n, first-64)
		subtle.XORBytes(dst[:m], src[:m], ks[64:64+m])
		st[12] = uint32(first / 64)
		for off := m; off < n; {
			// Whole passes of 16 blocks, then the last blocks through the key stream.
			if k := min(n-off, maxStreamBlocks*64) &^ 1023; k > 0 {
				chachaOne16(&st, &dst[off], &src[off], k)
				st[12] += uint32(k / 64)
				off += k
				continue
			}
			chachaKeyStream(&st, ks[:n-off])
			subtle.XORBytes(dst[off:], src[off:], ks[:n-off])
			off = n
		}
	}
	if !open {
		tag := mac(dst)
		chachaFinishTag(op, n, false, &tag)
	}
	clear(ks)
	clear(st[:])
	clear(sub[:])
	clear(polyKey[:])
	return ok
}

// chachaTinyOp is chachaOneOp for an n-byte message within blocks 1-3 whose MAC input is short
// (chachaShortMAC): one chachaKS4 pass gives the Poly1305 key and all the key stream, and the
// scalar Poly1305 reads the key where the pass left it. For a 64-byte packet the general path's
// buffers and closure cost about 5% of the op.
func chachaTinyOp(op *Op, open bool, n int) bool {
	var st [16]uint32 // the ChaCha20 state (RFC 8439 section 2.3)
	var sub [8]uint32
	key, nonce := chachaOpKey(op, &sub)
	st[0], st[1], st[2], st[3] = sigma0, sigma1, sigma2, sigma3
	copy(st[4:12], key[:])
	st[13], st[14], st[15] = nonce[0], nonce[1], nonce[2]
	var ks [4 * 64]byte // block 0: the Poly1305 key (section 2.6); blocks 1-3: the key stream
	chachaKS4(&st, &ks)
	polyKey := (*[32]byte)(ks[:32])
	src, dst := op.Src[:n], op.Dst[:n]
	ok := true
	if open {
		tag := poly1305AEAD(op.AD, src, polyKey)
		if ok = chachaFinishTag(op, n, true, &tag); ok {
			subtle.XORBytes(dst, src, ks[64:64+n])
		}
	} else {
		subtle.XORBytes(dst, src, ks[64:64+n])
		tag := poly1305AEAD(op.AD, dst, polyKey)
		copy(op.Dst[n:], tag[:])
	}
	clear(ks[:])
	clear(st[:])
	clear(sub[:])
	return ok
}

// chachaKeyStream writes the key stream from block counter st[12] on to out (at most 16 blocks),
// with the narrowest kernel that covers it.
func chachaKeyStream(st *[16]uint32, out []byte) {
	switch {
	case len(out) <= 4*64:
		chachaKS4(st, (*[4 * 64]byte)(out[:4*64:4*64]))
	case len(out) <= 8*64:
		chachaKS8(st, (*[8 * 64]byte)(out[:8*64:8*64]))
	default:
		chachaOne16(st, &out[0], &chachaZeros[0], 16*64)
	}
}

// runFew processes a chunk of at most chachaFewOps ops on the few-ops path.
func (c *chachaChunkState) runFew() (failed int) {
	var s streamLanes
	s.striped(c, !c.open)
	var p polyLanes
	p.radix26 = c.tier == AVX2 || !chachaIFMA
	for i := range c.n {
		if !c.finishTag(i, p.single(c.op[i].AD, c.ciphertext(i), &c.polyKey[i])) {
			failed++
		}
	}
	if c.open {
		s.striped(c, true)
	}
	return failed
}

// striped streams the chunk's ops with the lanes sharing each message, with the segments run chooses.
func (s *streamLanes) striped(c *chachaChunkState, data bool) {
	t := s.start(c.tier)
	open := c.open && data
	pending := 0 // lanes set up for the next one-block call
	flush := func() {
		if pending == 0 {
			return
		}
		for l := pending; l < 16; l++ {
			s.onIdle(l)
		}
		streamKernel(c.tier, t, &s.ptrs, 1, 64)
		for l := range pending {
			s.finish(c, l)
		}
		pending = 0
	}
	// lane sets lane l to op i's key, nonce and block counter b.
	lane := func(l, i int, b uint32) {
		key, nonce := c.keyWords(i), &c.nonce[i]
		for w := range 8 {
			t.rows[4+w][l] = key[w]
		}
		t.rows[12][l] = b
		t.rows[13][l], t.rows[14][l], t.rows[15][l] = nonce[0], nonce[1], nonce[2]
		s.op[l] = i
	}
	for i := range c.n {
		if open && c.failed[i] {
			continue
		}
		op, n := c.op[i], c.msgLen(i)
		whole, rest := 0, 0 // whole blocks, and those of them in the striped run
		if data {
			whole = n / 64
			rest = whole / 16 * 16
		}
		if rest > 0 {
			flush()
			for l := range 16 {
				lane(l, i, uint32(1+l))
				t.rows[16][l] = 16
				s.ptrs.src[l] = unsafe.Pointer(&op.Src[0])
				s.ptrs.dst[l] = unsafe.Pointer(&op.Dst[0])
				s.ptrs.off[l] = uintptr(64 * l)
			}
			for done := 0; done < rest/16; {
				k := min(rest/16-done, maxStreamBlocks)
				streamKernel(c.tier, t, &s.ptrs, k, 16*64)
				for l := range 16 {
					s.ptrs.off[l] += uintptr(k * 16 * 64)
				}
				done += k
			}
		}
		if !open {
			if pending == 16 {
				flush()
			}
			lane(pending, i, 0)
			s.seg[pending], s.block1[pending] = segPolyKey, false
			t.scratch[pending] = [128]byte{}
			s.onScratch(pending)
			pending++
		}
		for b := rest; b < whole; b++ {
			if pending == 16 {
				flush()
			}
			lane(pending, i, uint32(1+b))
			s.seg[pending] = segWhole
			s.ptrs.src[pending] = unsafe.Pointer(&op.Src[0])
			s.ptrs.dst[pending] = unsafe.Pointer(&op.Dst[0])
			s.ptrs.off[pending] = uintptr(64 * b)
			pending++
		}
		if data && n%64 != 0 {
			if pending == 16 {
				flush()
			}
			lane(pending, i, uint32(1+whole))
			s.seg[pending] = segTail
			copy(t.scratch[pending][:], op.Src[n&^63:n])
			s.onScratch(pending)
			pending++
		}
	}
	flush()
	*t = streamTable{}
}

// single returns the tag of ad and ct under the one-time key, with the lanes sharing the message.
func (p *polyLanes) single(ad, ct []byte, key *[32]byte) [TagSize]byte {
	t := p.tab()
	st := &t.st
	// Every lane starts with h = 0 and multiplier r: the lanes that carry no part of the message
	// read along with lane 0 and are ignored.
	p.fill(0, ad, ct, key, nil)
	r := poly1305R44(key)
	for l := 1; l < 16; l++ {
		p.setMul(l, r)
	}
	call := func(n, stride int) {
		for l := 1; l < 16; l++ {
			if l >= 8 || stride == 16 {
				p.ptrs.base[l], p.ptrs.off[l] = p.ptrs.base[0], p.ptrs.off[0]
			}
		}
		polyKernel(p.radix26, st, &p.ptrs, n, stride)
		for l := range 16 {
			p.ptrs.off[l] += uintptr(n * stride)
		}
	}
	// seq runs lane 0 through its segments until seg, one block at a time per lane.
	seq := func(until int) {
		for p.seg[0] < until {
			n := min(p.left[0], maxPolyBlocks)
			call(n, 16)
			if p.left[0] -= n; p.left[0] == 0 && !p.nextSeg(0, p.seg[0]+1) {
				p.seg[0] = macDone
			}
		}
	}

	seq(macCT) // the AD
	if rounds := p.left[0] / 8; p.seg[0] == macCT && rounds > 0 {
		var pow [9][3]uint64 // pow[k] = r^k
		pow[1] = r
		for k := 2; k <= 8; k++ {
			pow[k] = poly1305Mul44(pow[k-1], r)
		}
		base, off := p.ptrs.base[0], p.ptrs.off[0]
		for l := range 8 {
			p.setMul(l, pow[8])
			p.ptrs.base[l], p.ptrs.off[l] = base, off+uintptr(16*l)
			if l > 0 { // these lanes absorbed the AD along with lane 0
				p.setH(l, [3]uint64{})
			}
		}
		for done := 0; done < rounds-1; {
			n := min(rounds-1-done, maxPolyBlocks)
			call(n, 8*16)
			done += n
		}
		for l := range 8 {
			p.setMul(l, pow[8-l])
		}
		call(1, 8*16)

		// Lane 0 continues with the sum of the lanes, after one carry pass (limbs below 2^45).
		var h [3]uint64
		for l := range 8 {
			hl := p.h(l)
			h[0], h[1], h[2] = h[0]+hl[0], h[1]+hl[1], h[2]+hl[2]
		}
		h[1] += h[0] >> 44
		h[0] &= mask44
		h[2] += h[1] >> 44
		h[1] &= mask44
		h[0] += h[2] >> 42 * 5
		h[2] &= 1<<42 - 1
		p.setH(0, h)
		p.setMul(0, r)
		p.ptrs.base[0], p.ptrs.off[0] = base, off+uintptr(rounds*8*16)
		if p.left[0] -= rounds * 8; p.left[0] == 0 {
			p.nextSeg(0, macCTFinal)
		}
	}
	seq(macDone)
	tag := p.tag(0)
	p.wipe()
	return tag
}

// polyOne is poly1305IFMAOne's state: rows of eight qwords (see the generator for their use).
type polyOne [18][8]uint64

// setMul sets rows first..first+4 of lane l to the multiplier x (radix 2^44, limbs below 2^45).
func (st *polyOne) setMul(first, l int, x [3]uint64) {
	st[first][l], st[first+1][l], st[first+2][l] = x[0], x[1], x[2]
	st[first+3][l], st[first+4][l] = 20*x[1], 20*x[2]
}

// poly1305One returns the RFC 8439 section 2.8 tag of ad and ct under key with poly1305IFMAOne:
// one message, the lanes sharing its blocks.
func poly1305One(ad, ct []byte, key *[32]byte) (tag [TagSize]byte) {
	var st polyOne
	r := poly1305R44(key)
	for l := range 8 {
		st.setMul(13, l, r)
	}
	if len(ad) >= 8*16 || len(ct) >= 8*16 {
		var pow [9][3]uint64 // pow[k] = r^k, three multiplications deep
		pow[1] = r
		pow[2] = poly1305Mul44(r, r)
		pow[3], pow[4] = poly1305Mul44(pow[2], r), poly1305Mul44(pow[2], pow[2])
		for k := 5; k <= 8; k++ {
			pow[k] = poly1305Mul44(pow[4], pow[k-4])
		}
		for c := range 4 { // lanes 2c and 2c+1 take blocks c and 4+c of each group of 8
			st.setMul(3, 2*c, pow[8])
			st.setMul(3, 2*c+1, pow[8])
			st.setMul(8, 2*c, pow[8-c])
			st.setMul(8, 2*c+1, pow[4-c])
		}
		clear(pow[:])
	}
	var last [32]byte // a padded partial block, then the lengths block
	absorb := func(b []byte) {
		for len(b) >= 16 {
			n := min(len(b)/16, maxPolyBlocks)
			poly1305IFMAOne(&st, &b[0], n)
			b = b[16*n:]
		}
	}
	absorb(ad)
	if len(ad)%16 != 0 {
		copy(last[:], ad[len(ad)&^15:])
		absorb(last[:16])
	}
	absorb(ct)
	clear(last[:16])
	n := copy(last[:16], ct[len(ct)&^15:])
	binary.LittleEndian.PutUint64(last[16:], uint64(len(ad)))
	binary.LittleEndian.PutUint64(last[24:], uint64(len(ct)))
	if n > 0 {
		absorb(last[:])
	} else {
		absorb(last[16:])
	}
	h := [3]uint64{st[0][0], st[1][0], st[2][0]}
	poly1305Finish44(&tag, h[0], h[1], h[2], binary.LittleEndian.Uint64(key[16:]), binary.LittleEndian.Uint64(key[24:]))
	clear(st[:])
	return tag
}

// setMul sets lane l's multiplier to x (radix 2^44, limbs below 2^45), in the table's radix.
func (p *polyLanes) setMul(l int, x [3]uint64) {
	st := &p.tab().st
	if p.radix26 {
		w := to26(x)
		for i := range 5 {
			st[5+i][l] = w[i]
		}
		for i := 1; i < 5; i++ {
			st[9+i][l] = 5 * w[i]
		}
		return
	}
	st[3][l], st[4][l], st[5][l] = x[0], x[1], x[2]
	st[6][l], st[7][l] = 20*x[1], 20*x[2]
}

// setH sets lane l's accumulator to h (radix 2^44, limbs below 2^45), in the table's radix.
func (p *polyLanes) setH(l int, h [3]uint64) {
	st := &p.tab().st
	if p.radix26 {
		w := to26(h)
		for i := range 5 {
			st[i][l] = w[i]
		}
		return
	}
	st[0][l], st[1][l], st[2][l] = h[0], h[1], h[2]
}

// h returns lane l's accumulator in radix 2^44 with limbs below 2^44 + 2^17, 2^44 and 2^42 (what
// poly1305Finish44 takes).
func (p *polyLanes) h(l int) [3]uint64 {
	st := &p.tab().st
	if !p.radix26 {
		return [3]uint64{st[0][l], st[1][l], st[2][l]}
	}
	// The radix-2^26 limbs leave the kernel below 2^26 except limb 1 (< 2^26 + 2^11): carry them,
	// then regroup the bits.
	w0, w1, w2, w3, w4 := st[0][l], st[1][l], st[2][l], st[3][l], st[4][l]
	w2 += w1 >> 26
	w1 &= limb26
	w3 += w2 >> 26
	w2 &= limb26
	w4 += w3 >> 26
	w3 &= limb26
	w0 += w4 >> 26 * 5
	w4 &= limb26
	w1 += w0 >> 26
	w0 &= limb26
	return [3]uint64{(w0 | w1<<26) & mask44, (w1>>18 | w2<<8 | w3<<34) & mask44, w3>>10 | w4<<16}
}

// to26 converts x (radix 2^44, limbs below 2^45) to radix 2^26 with limbs below 2^26, except limb 0
// (< 2^26 + 2^18), after folding the bits above 2^130 back (times 5).
func to26(x [3]uint64) [5]uint64 {
	x1 := x[1] + x[0]>>44
	x0 := x[0] & mask44
	x2 := x[2] + x1>>44
	x1 &= mask44
	x0 += x2 >> 42 * 5
	x2 &= 1<<42 - 1
	x1 += x0 >> 44
	x0 &= mask44
	x2 += x1 >> 44
	x1 &= mask44
	return [5]uint64{x0 & limb26, (x0>>26 | x1<<18) & limb26, x1 >> 8 & limb26, (x1>>34 | x2<<10) & limb26, x2 >> 16}
}

// poly1305Mul44 returns a*b mod 2^130-5 in radix 2^44, not fully reduced: for limbs below 2^45 it
// returns limbs below 2^44, 2^44 + 1 and 2^42 + 1. As in the kernels, products of weight 2^132 fold
// back times 20 (2^132 = 4*5 mod 2^130-5). Constant time.
func poly1305Mul44(a, b [3]uint64) [3]uint64 {
	s1, s2 := 20*b[1], 20*b[2]
	// Each sum of three products of a limb below 2^45 and one below 2^50 is below 2^97.
	d0h, d0l := mulSum3(a[0], b[0], a[1], s2, a[2], s1)
	d1h, d1l := mulSum3(a[0], b[1], a[1], b[0], a[2], s2)
	d2h, d2l := mulSum3(a[0], b[2], a[1], b[1], a[2], b[0])

	var cy uint64
	c := d0l>>44 | d0h<<20 // < 2^53
	d1l, cy = bits.Add64(d1l, c, 0)
	d1h += cy
	c = d1l>>44 | d1h<<20
	d2l, cy = bits.Add64(d2l, c, 0)
	d2h += cy
	c = d2l>>42 | d2h<<22 // < 2^56: the part of weight 2^130 and above
	h0 := d0l&mask44 + c*5
	h1 := d1l&mask44 + h0>>44
	h2 := d2l&(1<<42-1) + h1>>44
	return [3]uint64{h0 & mask44, h1 & mask44, h2}
}

// mulSum3 returns x0*y0 + x1*y1 + x2*y2 as a 128-bit value (hi, lo); the sum must fit.
func mulSum3(x0, y0, x1, y1, x2, y2 uint64) (hi, lo uint64) {
	hi, lo = bits.Mul64(x0, y0)
	h, l := bits.Mul64(x1, y1)
	var c uint64
	lo, c = bits.Add64(lo, l, 0)
	hi += h + c
	h, l = bits.Mul64(x2, y2)
	lo, c = bits.Add64(lo, l, 0)
	hi += h + c
	return hi, lo
}
