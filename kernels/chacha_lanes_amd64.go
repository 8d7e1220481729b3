//go:build gc && !purego

package kernels

import (
	"crypto/subtle"
	"encoding/binary"
	"math/bits"
	"unsafe"
)

// The multi-lane driver of the AVX512 ChaCha20-Poly1305 tier: Go decides which message runs in which
// lane, the assembly (chacha_amd64.s) runs n blocks in all lanes at once.
//
// The batch is cut into chunks of up to chachaChunk ops, and each chunk goes through three stages:
//
//	stream (chachaXOR16, 16 lanes)   block 0 of each op -> its Poly1305 key (RFC 8439 section 2.6)
//	                                 blocks 1..  -> XORed into the message (Seal only; section 2.4)
//	MAC (polyKernel, 16 lanes)       AD || pad16 || ciphertext || pad16 || lengths (section 2.8),
//	                                 then the tag: written (Seal) or compared (Open)
//	stream, Open only                blocks 1.. of the ops whose tag verified
//
// so that Open releases no plaintext of a forged message. Within a stage every lane works through a
// list of segments (a run of whole blocks in the caller's buffer, or one block in a per-lane scratch
// block for partial blocks and padding). Each assembly call runs all lanes for the shortest remaining
// segment; a lane whose op is done is refilled at once with the chunk's next op, so unequal lengths
// keep the lanes busy until the chunk runs dry. Lanes without work run on their scratch block with
// stride 0 and their output is ignored.
//
// Memory: everything lives on the driver's stack (no allocation). The assembly tables, with the lanes'
// scratch blocks behind them, are aligned to 64 bytes inside byte arrays by hand (Go only aligns the
// stack to 8 bytes); the alignment survives a stack move because goroutine stacks are power-of-two
// sized and copied at the same offset from their top. The lanes hold the caller's buffers as
// unsafe.Pointer plus an offset, so the garbage collector and stack copier always see valid
// pointers. A lane working on its scratch block holds a nil buffer and the scratch block's offset
// from the table, which the assembly takes as its base instead: a pointer from the lane tables to
// themselves would make the compiler move them, and the ops they point to, to the heap.

// chachaChunk is the number of ops a chunk holds: enough for the lanes to be refilled many times.
const chachaChunk = 64

// Bounds on one assembly call, which cannot be preempted: 64 KiB per lane.
const (
	maxStreamBlocks = 1 << 10 // 64-byte blocks
	maxPolyBlocks   = 1 << 12 // 16-byte blocks
)

// chachaChunkState holds one chunk's ops and their per-op secrets.
type chachaChunkState struct {
	n       int
	op      [chachaChunk]*Op
	key     [chachaChunk][8]uint32 // the Key's words, or the XChaCha20 subkey
	nonce   [chachaChunk][3]uint32
	polyKey [chachaChunk][32]byte // one-time Poly1305 keys (r || s)
	failed  [chachaChunk]bool     // Open: the tag did not verify
	order   [chachaChunk]uint8    // the order in which lanes take the ops: see sortByLength
	open    bool
	tier    Tier // AVX2 or AVX512
	xchacha bool // some op is XChaCha20: c.key holds its key until c.hchacha
}

// msgLen returns the plaintext (= ciphertext) length of op i.
func (c *chachaChunkState) msgLen(i int) int {
	if c.open {
		return len(c.op[i].Src) - TagSize
	}
	return len(c.op[i].Src)
}

func (c *chachaChunkState) wipe() {
	clear(c.key[:])
	clear(c.polyKey[:])
}

// chachaRunLanes runs the ChaCha-family ops of ops through the lanes, chunk by chunk.
func chachaRunLanes(t Tier, ops []Op, open bool) (failed int) {
	if t == AVX512 {
		few := 0
		for i := range ops {
			if ops[i].Key.suite.isChaCha() {
				few++
			}
		}
		if few <= chachaFewOps {
			for i := range ops {
				op := &ops[i]
				if !op.Key.suite.isChaCha() {
					continue
				}
				if open && len(op.Src) < TagSize {
					failOpen(op)
					failed++
				} else if !chachaOneOp(op, open) {
					failed++
				}
			}
			return failed
		}
	}
	var c chachaChunkState
	c.open, c.tier = open, t
	defer c.wipe()
	for i := range ops {
		op := &ops[i]
		if !op.Key.suite.isChaCha() {
			continue
		}
		if open && len(op.Src) < TagSize {
			failOpen(op)
			failed++
			continue
		}
		k := c.n
		c.op[k] = op
		n := op.Nonce
		c.key[k] = op.Key.chacha
		if op.Key.suite == XChaCha20Poly1305 {
			// The HChaCha20 subkey replaces the key in c.hchacha; the nonce is 0^32 || nonce[16:24].
			c.nonce[k] = [3]uint32{0, binary.LittleEndian.Uint32(n[16:]), binary.LittleEndian.Uint32(n[20:])}
			c.xchacha = true
		} else {
			c.nonce[k] = [3]uint32{binary.LittleEndian.Uint32(n[0:]), binary.LittleEndian.Uint32(n[4:]),
				binary.LittleEndian.Uint32(n[8:])}
		}
		c.n++
		if c.n == chachaChunk {
			failed += c.run()
		}
	}
	if c.n > 0 {
		failed += c.run()
	}
	return failed
}

// run processes the chunk's ops and empties it.
func (c *chachaChunkState) run() (failed int) {
	if c.xchacha {
		var s streamLanes
		s.hchacha(c)
		c.xchacha = false
	}
	if c.n <= chachaFewOps {
		failed = c.runFew()
	} else {
		c.sortByLength()
		var s streamLanes
		s.run(c, !c.open)
		var p polyLanes
		p.radix26 = c.tier == AVX2 || !chachaIFMA
		failed = p.run(c)
		if c.open {
			s.run(c, true)
		}
	}
	c.n = 0
	clear(c.failed[:])
	return failed
}

// hchacha replaces the key of each XChaCha20 op of the chunk with its HChaCha20 subkey
// (draft-irtf-cfrg-xchacha section 2.2), 16 ops per kernel call. HChaCha20 is the ChaCha20 block
// function with the nonce's first 16 bytes in words 12..15 and without the final addition of the
// input: the kernel adds it, so the lanes run on a zeroed scratch block and the input words are
// subtracted again from words 0..3 and 12..15 of the output.
func (s *streamLanes) hchacha(c *chachaChunkState) {
	t := s.start(c.tier)
	for l := range 16 {
		s.onScratch(l)
	}
	var in [4]uint32 // words 12..15 of the input of lane l
	lanes := 0
	flush := func() {
		t.scratch = [16][64]byte{}
		streamKernel(c.tier, t, &s.ptrs, 1, 64)
		for l := range lanes {
			i, out := s.op[l], &t.scratch[l]
			for w := range 4 {
				in[w] = t.rows[12+w][l]
				c.key[i][w] = binary.LittleEndian.Uint32(out[4*w:]) - t.rows[w][l]
				c.key[i][4+w] = binary.LittleEndian.Uint32(out[48+4*w:]) - in[w]
			}
		}
		lanes = 0
	}
	for i := range c.n {
		op := c.op[i]
		if op.Key.suite != XChaCha20Poly1305 {
			continue
		}
		s.op[lanes] = i
		for w := range 8 {
			t.rows[4+w][lanes] = c.key[i][w]
		}
		for w := range 4 {
			t.rows[12+w][lanes] = binary.LittleEndian.Uint32(op.Nonce[4*w:])
		}
		if lanes++; lanes == 16 {
			flush()
		}
	}
	if lanes > 0 {
		flush()
	}
	clear(in[:])
	*t = streamTable{}
}

// sortByLength sets c.order to the chunk's ops by decreasing length, in classes of equal block
// count (all counts above orderClasses-1 in one class): a counting sort, linear in the chunk. Lanes
// that start ops of equal length together finish them together, so one assembly call serves many
// lanes' segments, and the longest ops start first, so the short ones fill the lanes at the end.
func (c *chachaChunkState) sortByLength() {
	const orderClasses = 32
	var class [chachaChunk]uint8
	var start [orderClasses + 1]uint8
	sorted := true
	for i := range c.n {
		k := orderClasses - 1 - min(c.msgLen(i)/64, orderClasses-1)
		class[i] = uint8(k)
		start[k+1]++
		sorted = sorted && (i == 0 || class[i-1] <= class[i])
	}
	if sorted { // uniform batches, mostly
		for i := range c.n {
			c.order[i] = uint8(i)
		}
		return
	}
	for k := 1; k <= orderClasses; k++ {
		start[k] += start[k-1]
	}
	for i := range c.n {
		k := class[i]
		c.order[start[k]] = uint8(i)
		start[k]++
	}
}

// Stream segments of one op, in counter order.
const (
	segPolyKey = iota // block 0 into the lane's scratch block; its first 32 bytes are the Poly1305 key
	segWhole          // the message's whole blocks, in place in the caller's buffers
	segTail           // the last partial block, through the scratch block
	segDone
)

// streamLanes is the state of the 16 ChaCha20 lanes.
type streamLanes struct {
	masked bool                                    // the kernel takes byte masks for the last block (AVX512): no segTail
	buf    [64 + unsafe.Sizeof(streamTable{})]byte // holds the streamTable at a 64-byte boundary
	ptrs   chachaPtrs16
	op     [16]int // the chunk index of the lane's op, -1 when idle
	seg    [16]int // the lane's current segment
	left   [16]int // blocks left in it
}

// streamTable is what the lane kernels read at their tab argument, at offsets the generator
// (_asm/chacha) hard-codes: the transposed state, the lanes' addresses, a spilled state, the lanes'
// byte masks and scratch blocks, and the blocks idle lanes run on.
type streamTable struct {
	rows    [17][16]uint32
	addr    [2][16]uint64  // the kernel's
	spill   [16][16]uint32 // the kernel's: a second state waiting for the registers
	mask    [16]uint64     // per lane, the byte mask of a call's last block (AVX512 only)
	scratch [16][64]byte   // per lane, a block the lane runs on (see onScratch)
	idle    [idleBlocks][64]byte
}

// idleBlocks bounds the calls that have idle lanes: all idle lanes run through these blocks (their
// writes are garbage, and they overlap).
const idleBlocks = 16

// start readies the lanes for tier t: the constant rows, and masks that pass whole blocks.
func (s *streamLanes) start(t Tier) *streamTable {
	s.masked = t == AVX512
	tab := s.tab()
	for l := range 16 {
		tab.rows[0][l], tab.rows[1][l], tab.rows[2][l], tab.rows[3][l] = sigma0, sigma1, sigma2, sigma3
		tab.mask[l] = ^uint64(0)
	}
	return tab
}

// tab returns the 64-byte aligned table inside s.buf.
func (s *streamLanes) tab() *streamTable {
	p := unsafe.Pointer(&s.buf[0])
	return (*streamTable)(unsafe.Add(p, -uintptr(p)&63))
}

// onScratch points lane l at its scratch block (see the file comment).
func (s *streamLanes) onScratch(l int) {
	s.ptrs.src[l], s.ptrs.dst[l] = nil, nil
	s.ptrs.off[l] = unsafe.Offsetof(streamTable{}.scratch) + uintptr(l)*64
}

// onIdle points lane l at the idle blocks (see the file comment).
func (s *streamLanes) onIdle(l int) {
	s.ptrs.src[l], s.ptrs.dst[l] = nil, nil
	s.ptrs.off[l] = unsafe.Offsetof(streamTable{}.idle)
}

// run streams the chunk's ops through the lanes: the Poly1305 key blocks, and with data also the
// message blocks. Open's data pass (polyKey false... see below) skips the failed ops.
func (s *streamLanes) run(c *chachaChunkState, data bool) {
	t := s.start(c.tier)
	first, last := segPolyKey, segPolyKey
	if data {
		last = segTail
		if c.open {
			first = segWhole
		}
	}
	for l := range 16 {
		t.rows[16][l] = 1
	}
	next, active := 0, 0
	for l := range 16 {
		s.op[l] = -1
		next = s.fill(c, l, next, first, last)
		if s.op[l] >= 0 {
			active++
		}
	}
	for active > 0 {
		n := maxStreamBlocks
		if active < 16 {
			n = idleBlocks
		}
		for l := range 16 {
			if s.op[l] >= 0 && s.left[l] < n {
				n = s.left[l]
			}
		}
		if s.masked { // a message's partial last block ends the call: mask it
			for l := range 16 {
				t.mask[l] = ^uint64(0)
				if i := s.op[l]; i >= 0 && s.seg[l] == segWhole && s.left[l] == n && c.msgLen(i)%64 != 0 {
					t.mask[l] = 1<<(c.msgLen(i)%64) - 1
				}
			}
		}
		streamKernel(c.tier, t, &s.ptrs, n, 64)
		for l := range 16 {
			if s.op[l] < 0 {
				continue
			}
			s.ptrs.off[l] += uintptr(n) * 64
			if s.left[l] -= n; s.left[l] > 0 {
				continue
			}
			s.finish(c, l)
			if s.nextSeg(c, l, s.seg[l]+1, last) {
				continue
			}
			next = s.fill(c, l, next, first, last)
			if s.op[l] < 0 {
				active--
			}
		}
	}
	*t = streamTable{}
}

// fill loads the chunk's next op (from index next) that has work into lane l, or leaves the lane
// idle, and returns the new next.
func (s *streamLanes) fill(c *chachaChunkState, l, next, first, last int) int {
	for ; next < c.n; next++ {
		i := int(c.order[next])
		if c.failed[i] && first == segWhole {
			continue
		}
		s.op[l] = i
		key, nonce, rows := &c.key[i], &c.nonce[i], &s.tab().rows
		for w := range 8 {
			rows[4+w][l] = key[w]
		}
		rows[12][l] = uint32(first) // block 0 for the Poly1305 key, block 1 for the data pass
		rows[13][l], rows[14][l], rows[15][l] = nonce[0], nonce[1], nonce[2]
		if s.nextSeg(c, l, first, last) {
			return next + 1
		}
	}
	s.op[l] = -1
	s.onIdle(l)
	return next
}

// nextSeg points lane l at the first non-empty segment of its op from seg up to last and reports
// whether there is one.
func (s *streamLanes) nextSeg(c *chachaChunkState, l, seg, last int) bool {
	i := s.op[l]
	op, n := c.op[i], c.msgLen(i)
	for ; seg <= last; seg++ {
		s.seg[l] = seg
		s.ptrs.off[l] = 0
		switch seg {
		case segPolyKey:
			s.tab().scratch[l] = [64]byte{}
			s.onScratch(l)
			s.left[l] = 1
			return true
		case segWhole:
			// On AVX512 the partial last block runs in place too, under a byte mask.
			blocks := n / 64
			if s.masked {
				blocks = (n + 63) / 64
			}
			if blocks == 0 {
				continue
			}
			s.ptrs.src[l] = unsafe.Pointer(&op.Src[0])
			s.ptrs.dst[l] = unsafe.Pointer(&op.Dst[0])
			s.left[l] = blocks
			return true
		case segTail:
			if n%64 == 0 || s.masked {
				continue
			}
			copy(s.tab().scratch[l][:], op.Src[n&^63:n])
			s.onScratch(l)
			s.left[l] = 1
			return true
		}
	}
	return false
}

// finish takes the output of lane l's completed segment out of its scratch block.
func (s *streamLanes) finish(c *chachaChunkState, l int) {
	i := s.op[l]
	switch s.seg[l] {
	case segPolyKey:
		copy(c.polyKey[i][:], s.tab().scratch[l][:32])
	case segTail:
		n := c.msgLen(i)
		copy(c.op[i].Dst[n&^63:n], s.tab().scratch[l][:])
	}
}

// MAC segments of one op (RFC 8439 section 2.8).
const (
	macAD      = iota // the AD's whole 16-byte blocks, in place
	macADTail         // its last partial block, zero padded, in scratch[0:16]
	macCT             // the ciphertext's whole blocks, in place
	macCTFinal        // its last partial block padded (if any) and the lengths block, in scratch[16:48]
	macDone
)

// polyLanes is the state of the 16 Poly1305 lanes. A lane holds its message as slices of the
// caller's AD and ciphertext and its one-time key by value, so that it needs nothing of the chunk.
type polyLanes struct {
	buf     [64 + unsafe.Sizeof(polyTable{})]byte // holds the polyTable at a 64-byte boundary
	radix26 bool                                  // the table is poly1305AVX2's, else the IFMA kernels'
	ptrs    polyPtrs16
	op      [16]int // the lane's op (chunk index), -1 when idle
	ad, ct  [16][]byte
	seg     [16]int
	left    [16]int
	r       [16][3]uint64 // the lane's clamped key r, radix 2^44
	s       [16][16]byte  // the lane's key s
}

// polyTable is what the Poly1305 kernels read at their st argument: the lanes' accumulators,
// multipliers and addresses in the kernel's radix, then their scratch blocks.
type polyTable struct {
	st      [15][16]uint64
	scratch [16][48]byte
}

// tab returns the 64-byte aligned table inside p.buf.
func (p *polyLanes) tab() *polyTable {
	b := unsafe.Pointer(&p.buf[0])
	return (*polyTable)(unsafe.Add(b, -uintptr(b)&63))
}

// onScratch points lane l at byte off of its scratch block (see the file comment).
func (p *polyLanes) onScratch(l int, off uintptr) {
	p.ptrs.base[l] = nil
	p.ptrs.off[l] = unsafe.Offsetof(polyTable{}.scratch) + uintptr(l)*48 + off
}

// wipe clears the lanes' secrets and references.
func (p *polyLanes) wipe() {
	*p.tab() = polyTable{}
	clear(p.r[:])
	clear(p.s[:])
	clear(p.ad[:])
	clear(p.ct[:])
}

// run computes the tags of the chunk's ops, writes them (Seal) or checks them (Open, zeroing the
// destination and marking the op failed on a mismatch), and returns the number of failures.
func (p *polyLanes) run(c *chachaChunkState) (failed int) {
	t := p.tab()
	next, active := 0, 0
	load := func(l int) { // lane l takes the chunk's next op, or idles
		p.op[l] = -1
		if next < c.n {
			i := int(c.order[next])
			p.op[l] = i
			p.fill(l, c.op[i].AD, c.ciphertext(i), &c.polyKey[i])
			next++
			active++
		}
	}
	for l := range 16 {
		load(l)
	}
	for active > 0 {
		n, busy := maxPolyBlocks, -1
		for l := range 16 {
			if p.op[l] >= 0 {
				busy = l
				n = min(n, p.left[l])
			}
		}
		// Idle lanes read along with a busy one: all lanes share the stride, and their result is
		// never used.
		for l := range 16 {
			if p.op[l] < 0 {
				p.ptrs.base[l], p.ptrs.off[l] = p.ptrs.base[busy], p.ptrs.off[busy]
			}
		}
		polyKernel(p.radix26, &t.st, &p.ptrs, n, 16)
		for l := range 16 {
			if p.op[l] < 0 {
				continue
			}
			p.ptrs.off[l] += uintptr(n) * 16
			if p.left[l] -= n; p.left[l] > 0 {
				continue
			}
			if p.nextSeg(l, p.seg[l]+1) {
				continue
			}
			if !c.finishTag(p.op[l], p.tag(l)) {
				failed++
			}
			active--
			load(l)
		}
	}
	p.wipe()
	return failed
}

// ciphertext returns the ciphertext op i is authenticated over: Seal's output, Open's input.
func (c *chachaChunkState) ciphertext(i int) []byte {
	if c.open {
		return c.op[i].Src[:c.msgLen(i)]
	}
	return c.op[i].Dst[:c.msgLen(i)]
}

// finishTag writes op i's tag (Seal) or checks it (Open, failing the op on a mismatch) and reports
// whether the op succeeded.
func (c *chachaChunkState) finishTag(i int, tag [TagSize]byte) bool {
	if !chachaFinishTag(c.op[i], c.msgLen(i), c.open, &tag) {
		c.failed[i] = true
		return false
	}
	return true
}

// chachaFinishTag writes tag after op's n-byte ciphertext (Seal) or compares it in constant time with
// op's tag (Open), failing the op on a mismatch. It reports whether the op succeeded.
func chachaFinishTag(op *Op, n int, open bool, tag *[TagSize]byte) bool {
	if !open {
		copy(op.Dst[n:], tag[:])
		return true
	}
	if subtle.ConstantTimeCompare(tag[:], op.Src[n:]) != 1 {
		failOpen(op)
		return false
	}
	op.Err = nil
	return true
}

// fill starts lane l on the MAC of ad and ct under the one-time key.
func (p *polyLanes) fill(l int, ad, ct []byte, key *[32]byte) {
	// The lane's multiplier: r clamped (section 2.5.1) in radix 2^44.
	lo := binary.LittleEndian.Uint64(key[0:]) & 0x0ffffffc0fffffff
	hi := binary.LittleEndian.Uint64(key[8:]) & 0x0ffffffc0ffffffc
	r := [3]uint64{lo & mask44, (lo>>44 | hi<<20) & mask44, hi >> 24}
	p.setH(l, [3]uint64{})
	p.setMul(l, r)
	p.r[l] = r
	copy(p.s[l][:], key[16:])
	p.ad[l], p.ct[l] = ad, ct

	// Scratch: the AD's last partial block padded, then the ciphertext's, then the lengths.
	sc := &p.tab().scratch[l]
	*sc = [48]byte{}
	n := len(ct)
	copy(sc[0:16], ad[len(ad)&^15:])
	copy(sc[16:32], ct[n&^15:])
	binary.LittleEndian.PutUint64(sc[32:], uint64(len(ad)))
	binary.LittleEndian.PutUint64(sc[40:], uint64(n))

	p.nextSeg(l, macAD) // macCTFinal always has the lengths block
}

const mask44 = 1<<44 - 1

// nextSeg points lane l at the first non-empty MAC segment from seg on and reports whether there is one.
func (p *polyLanes) nextSeg(l, seg int) bool {
	ad, ct := p.ad[l], p.ct[l]
	n := len(ct)
	for ; seg < macDone; seg++ {
		p.seg[l] = seg
		p.ptrs.off[l] = 0
		switch seg {
		case macAD:
			if len(ad) < 16 {
				continue
			}
			p.ptrs.base[l] = unsafe.Pointer(&ad[0])
			p.left[l] = len(ad) / 16
		case macADTail:
			if len(ad)%16 == 0 {
				continue
			}
			p.onScratch(l, 0)
			p.left[l] = 1
		case macCT:
			if n < 16 {
				continue
			}
			p.ptrs.base[l] = unsafe.Pointer(&ct[0])
			p.left[l] = n / 16
		case macCTFinal:
			if n%16 != 0 {
				p.onScratch(l, 16)
				p.left[l] = 2
			} else {
				p.onScratch(l, 32)
				p.left[l] = 1
			}
		}
		return true
	}
	return false
}

// tag returns lane l's finished tag.
func (p *polyLanes) tag(l int) (t [TagSize]byte) {
	h := p.h(l)
	poly1305Finish44(&t, h[0], h[1], h[2], p.s[l][:])
	return t
}

// poly1305Finish44 writes (h mod 2^130-5 + s) mod 2^128 (RFC 8439 section 2.5.1) for h = h0 + h1*2^44
// + h2*2^88 as the lanes leave it (h0 < 2^44 + 2^17, h1 < 2^44, h2 < 2^42). Constant time.
func poly1305Finish44(out *[TagSize]byte, h0, h1, h2 uint64, s []byte) {
	// Two carry passes make h < 2^130 with canonical limbs.
	for range 2 {
		h1 += h0 >> 44
		h0 &= mask44
		h2 += h1 >> 44
		h1 &= mask44
		h0 += (h2 >> 42) * 5
		h2 &= 1<<42 - 1
	}
	h1 += h0 >> 44
	h0 &= mask44
	h2 += h1 >> 44
	h1 &= mask44
	lo := h0 | h1<<44
	hi := h1>>20 | h2<<24
	top := h2 >> 40 // bits 128 and 129

	// g = h + 5; h >= p exactly when g reaches 2^130, and then h - p = g - 2^130.
	g0, cy := bits.Add64(lo, 5, 0)
	g1, cy := bits.Add64(hi, 0, cy)
	useG := -((top + cy) >> 2) // all ones when g >= 2^130
	lo = lo&^useG | g0&useG
	hi = hi&^useG | g1&useG

	lo, cy = bits.Add64(lo, binary.LittleEndian.Uint64(s[0:]), 0)
	hi, _ = bits.Add64(hi, binary.LittleEndian.Uint64(s[8:]), cy)
	binary.LittleEndian.PutUint64(out[0:], lo)
	binary.LittleEndian.PutUint64(out[8:], hi)
}
