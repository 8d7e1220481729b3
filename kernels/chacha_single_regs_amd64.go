// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

//go:build gc && !purego

package kernels

// The single-message path of the AVX2 tier on cores with a 1-cycle vector latency
// (impl.chachaAVX2Regs): passes of 8 consecutive blocks with the state in registers
// (chachaXOR8OneAVX2Regs), the message's Poly1305 chain run on the scalar pipes inside the passes
// (chachaXOR8OneMACAVX2Regs, up to chachaRegsMACPerPass blocks a pass), and what the passes could
// not take in the same kernel's scalar loop.
//
// The first pass gives the Poly1305 key (block 0, RFC 8439 section 2.6) and the first key-stream
// blocks: 8 blocks, or 4 (chachaKS4AVX2, about 60% of an 8-block pass's time) when that leaves a
// whole number of 8-block passes for the rest, so that no pass runs blocks past the message's end.
// The MAC chain, whose blocks depend one on the next, is what bounds one message; it cannot start
// before that first pass.
//
// Seal: every later pass encrypts the next 512 bytes while it absorbs ciphertext that the passes
// before it wrote; in a batch, the blocks of an op's last pass run beside the next op's first
// (sealPipeline). Open authenticates before it decrypts: a message of up to chachaRegsOpenMax bytes
// keeps its whole key stream in a buffer, the passes absorbing the ciphertext as they make it, and is
// decrypted from the buffer once its tag verified; a longer one takes chachaOneOp's general path.

// chachaRegsMACPerPass is the most MAC blocks one 8-block pass absorbs within its rounds (three of
// its double rounds' eight points: _asm/chacha macPoints).
const chachaRegsMACPerPass = 30

// chachaRegsOpenMax is the longest message whose Open keeps its key stream in a buffer (23 blocks
// after block 0: a full-size WireGuard packet).
const chachaRegsOpenMax = 23 * 64

// chachaRegsHead returns how many blocks the first pass of an n-byte message runs: 4 when the
// message's blocks (block 0 and ceil(n/64) after it) come to a multiple of 8 plus 1 to 4, else 8.
func chachaRegsHead(n int) int {
	if b := 1 + (n+63)/64; b > 8 && (b-1)%8 < 4 {
		return 4
	}
	return 8
}

// chachaHeadPass runs the first pass of chachaRegsHead(n) blocks from block 0 into ks.
func chachaHeadPass(st *[16]uint32, ks *[8 * 64]byte, head int) {
	if head == 4 {
		chachaKS4AVX2(st, (*[4 * 64]byte)(ks[:4*64]))
		return
	}
	chachaXOR8OneAVX2Regs(st, &ks[0], &chachaZeros[0], 8*64)
}

// chachaOneOpRegs seals or opens op (n bytes of message, more than 3 blocks' worth or a long MAC
// input) on the AVX2 tier's kernels for 1-cycle cores and reports whether it succeeded. A Seal is a
// pipeline of one op (sealPipeline).
func chachaOneOpRegs(op *Op, open bool, n int) bool {
	if open {
		if n > chachaRegsOpenMax {
			return chachaOneOp(op, open, AVX2)
		}
		return chachaOpenRegs(op, n)
	}
	var q sealPipeline
	q.seal(nil, op)
	q.close(op)
	return true
}

// chachaSealPipelineAVX2 seals the ops of ops that p takes, in order, on the single-message path
// for 1-cycle cores as one pipeline (sealPipeline).
func chachaSealPipelineAVX2(ops []Op, p *pipeSeals) {
	var q sealPipeline
	var prev *Op
	for i := range ops {
		if op := &ops[i]; p.takes(op) {
			q.seal(prev, op)
			prev = op
		}
	}
	q.close(prev)
}

// sealPipeline seals ops one after the other on the single-message path for 1-cycle cores, and
// absorbs the ciphertext blocks that an op's own passes could not (its last pass's, some 30 blocks
// of a full-size packet) beside the rounds of the next op's first pass, whose scalar pipes are idle
// otherwise. Alone, in the kernel's scalar loop, those blocks are one chain of dependent steps
// (some 18 cycles each) and cost about what a pass does. The last op's blocks run alone (close).
// The ops are the callers' to hold, not the pipeline's: a pointer stored in it would move the
// callers' ops to the heap.
type sealPipeline struct {
	mac  poly1305 // the MAC of the op last sealed
	done int      // bytes of its ciphertext absorbed (whole blocks)
	// ks is the key-stream buffer: an op's first pass (block 0 first), then its last partial pass.
	ks [8 * 64]byte
}

// seal seals op up to the ciphertext blocks that its passes leave to the next op's first pass, and
// finishes prev, the op sealed before it if not nil, beside its own first pass.
func (q *sealPipeline) seal(prev, op *Op) {
	n := len(op.Src)
	var st [16]uint32 // the ChaCha20 state (RFC 8439 section 2.3)
	var sub [8]uint32
	key, nonce := chachaOpKey(op, &sub, true)
	chachaInit(&st, key, 0, &nonce)
	head := chachaRegsHead(n)
	if prev != nil {
		head = 8 // the pass with the MAC beside its rounds
		ct := prev.Dst[:len(prev.Src)]
		blocks := min((len(ct)-q.done)/16, chachaRegsMACPerPass)
		var msg *byte
		if blocks > 0 {
			msg = &ct[q.done]
		}
		chachaXOR8OneMACAVX2Regs(&st, &q.ks[0], &chachaZeros[0], 8*64, &q.mac, msg, blocks)
		q.done += 16 * blocks
		q.finish(prev)
	} else {
		chachaHeadPass(&st, &q.ks, head)
	}
	q.mac.init(q.ks[:32])
	q.mac.writePadded(op.AD)
	// Every pass after the first encrypts the next 512 bytes while it absorbs ciphertext that the
	// passes before it wrote.
	src, dst := op.Src[:n], op.Dst[:n]
	ready := min(n, 64*head-64) // ciphertext bytes written so far
	xorStream(dst[:ready], src[:ready], q.ks[64:])
	for off := ready; off < n; off += 8 * 64 {
		st[12] = uint32(off/64 + 1)
		k := min(n-off, 8*64)
		blocks := min((ready-q.done)/16, chachaRegsMACPerPass)
		var msg *byte
		if blocks > 0 {
			msg = &dst[q.done]
		}
		if k == 8*64 {
			chachaXOR8OneMACAVX2Regs(&st, &dst[off], &src[off], 8*64, &q.mac, msg, blocks)
		} else { // the last blocks, through the buffer
			chachaXOR8OneMACAVX2Regs(&st, &q.ks[0], &chachaZeros[0], 8*64, &q.mac, msg, blocks)
			xorStream(dst[off:], src[off:], q.ks[:k])
		}
		q.done += 16 * blocks
		ready = off + k
	}
	clear(st[:])
	clear(sub[:])
}

// finish absorbs what is left of op's ciphertext, its padding and lengths, and writes op's tag; op
// is the op last sealed.
func (q *sealPipeline) finish(op *Op) {
	n := len(op.Src)
	chachaRegsMACRest(&q.mac, op.Dst[:n], q.done)
	tag := q.mac.aeadTag(len(op.AD), n) // wipes mac
	chachaFinishTag(op, n, false, &tag)
	q.done = 0
}

// close finishes last, the op last sealed if not nil, and wipes the key-stream buffer.
func (q *sealPipeline) close(last *Op) {
	if last != nil {
		q.finish(last)
	}
	clear(q.ks[:])
}

// chachaOpenRegs is chachaOneOpRegs's Open, for n <= chachaRegsOpenMax.
func chachaOpenRegs(op *Op, n int) bool {
	var st [16]uint32 // the ChaCha20 state (RFC 8439 section 2.3)
	var sub [8]uint32
	key, nonce := chachaOpKey(op, &sub, true)
	chachaInit(&st, key, 0, &nonce)
	sc := oneOpScratches.Get().(*oneOpScratch)
	ks := &sc.ks // the message's key stream, block 0 first
	head := chachaRegsHead(n)
	chachaHeadPass(&st, (*[8 * 64]byte)(ks[:8*64]), head)
	var mac poly1305
	mac.init(ks[:32])
	mac.writePadded(op.AD)
	src := op.Src[:n]
	done := 0            // ciphertext bytes absorbed (whole blocks)
	written := 64 * head // key-stream bytes in ks
	for off := 64*head - 64; off < n; off += 8 * 64 {
		st[12] = uint32(off/64 + 1)
		blocks := min((n-done)/16, chachaRegsMACPerPass)
		var msg *byte
		if blocks > 0 {
			msg = &src[done]
		}
		chachaXOR8OneMACAVX2Regs(&st, &ks[off+64], &chachaZeros[0], 8*64, &mac, msg, blocks)
		done += 16 * blocks
		written = off + 64 + 8*64
	}
	chachaRegsMACRest(&mac, src, done)
	tag := mac.aeadTag(len(op.AD), n)
	ok := chachaFinishTag(op, n, true, &tag)
	if ok {
		xorStream(op.Dst[:n], src, ks[64:64+n])
	}
	clear(ks[:written]) // the rest is zero still: the scratch goes back all zero
	oneOpScratches.Put(sc)
	clear(st[:])
	clear(sub[:])
	return ok
}

// chachaRegsMACRest absorbs ct[done:], the ciphertext the passes left, into mac: its whole blocks in
// the MULX loop of chachaXOR8OneMACAVX2Regs, the last partial block padded (RFC 8439 section 2.8).
func chachaRegsMACRest(mac *poly1305, ct []byte, done int) {
	var st [16]uint32 // read by the kernel, not used with n = 0
	for whole := (len(ct) - done) / 16; whole > 0; {
		b := min(whole, maxPolyBlocks)
		chachaXOR8OneMACAVX2Regs(&st, nil, nil, 0, mac, &ct[done], b)
		done += 16 * b
		whole -= b
	}
	mac.writePadded(ct[done:])
}
