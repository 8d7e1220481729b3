// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

//go:build gc && !purego

package kernels

import (
	"sync"
	"unsafe"
)

// Tiny ops on 1-cycle cores (impl.chachaTinyFused): a whole op in one call of a fused kernel, key
// stream, XOR, Poly1305 and tag. An op's rounds are one chain of dependent steps that leaves most
// of the vector pipes idle, so ops within block 1 of the key stream run chachaTinyLanes to a call
// (chachaPoly1305Tiny3AVX2, their rounds interleaved); the others, and the last one or two of a
// batch, one to a call (chachaPoly1305TinyAVX2, up to chachaTinyMax bytes). A triple's MACs, one
// chain of dependent blocks after another on the scalar pipes, take about a third of its call; in
// a batch with enough such ops the triples run as a pipeline instead (chachaPoly1305Tiny3PipeAVX2),
// each triple's MACs beside the next triple's rounds.

// chachaTinyLanes is how many ops chachaPoly1305Tiny3AVX2 takes; chachaTinyLaneMax is the longest
// message it takes (block 1). Its AD, like chachaPoly1305TinyAVX2's, is at most chachaFusedAD bytes.
const (
	chachaTinyLanes   = 3
	chachaTinyLaneMax = 64
)

// chachaTinyLane is one op of chachaPoly1305Tiny3AVX2; the generator (_asm/chacha, tiny_lanes_avx2.go)
// hard-codes its layout.
type chachaTinyLane struct {
	key   *[8]uint32 // ChaCha20 key words (XChaCha20: the subkey)
	nonce *[12]byte
	dst   *byte
	src   *byte
	// n: message bytes, 0 to chachaTinyLaneMax (chachaPoly1305Tiny2AVX2: to chachaTinyPairMax; the
	// AVX-512 kernels: to chachaTinyMax)
	n     int
	ad    *byte
	adLen int // 0 to chachaFusedAD
	tag   *[TagSize]byte
}

// chachaPoly1305Tiny3AVX2 seals (open false) or opens the ops of lanes: Seal writes every Dst and tag
// and returns 7; Open writes lane i's Dst only once its tag has verified and sets bit i of ok then.
//
//go:noescape
func chachaPoly1305Tiny3AVX2(lanes *[chachaTinyLanes]chachaTinyLane, open bool) (ok uint8)

// chachaTinyPairMax is the longest message chachaPoly1305Tiny2AVX2 takes: blocks 1 and 2.
const chachaTinyPairMax = 2 * 64

// chachaPoly1305Tiny2AVX2 is chachaPoly1305Tiny3AVX2 on the first two ops of lanes, for messages
// of up to chachaTinyPairMax bytes (three row-form states: each op's blocks 0 and 1, and block 2
// of both): Seal returns 3.
//
//go:noescape
func chachaPoly1305Tiny2AVX2(lanes *[chachaTinyLanes]chachaTinyLane, open bool) (ok uint8)

// chachaPoly1305Tiny3AVX512 is chachaPoly1305Tiny3AVX2 for messages of up to chachaTinyMax bytes,
// on AVX-512 (six row-form states in the EVEX registers, rotations by VPROLD).
//
//go:noescape
func chachaPoly1305Tiny3AVX512(lanes *[chachaTinyLanes]chachaTinyLane, open bool) (ok uint8)

// chachaPoly1305Tiny2AVX512 is chachaPoly1305Tiny3AVX512 on the first two ops of lanes.
//
//go:noescape
func chachaPoly1305Tiny2AVX512(lanes *[chachaTinyLanes]chachaTinyLane, open bool) (ok uint8)

// chachaTinyPipeLane is one op of a chachaTinyPipe; the generator (_asm/chacha, tiny_pipe_avx2.go)
// hard-codes its layout.
type chachaTinyPipeLane struct {
	mac    [144]byte // the MAC's input (RFC 8439 section 2.8): AD and ciphertext zero-padded, lengths
	ks     [64]byte  // Open: key-stream block 1
	r, s   [2]uint64 // the one-time key (section 2.6), r clamped
	h      [3]uint64 // the accumulator while the chain runs
	blocks int       // 16-byte blocks of mac
	ct     int       // the ciphertext's offset in mac
	n      int
}

// chachaTinyPipe is a triple of chachaPoly1305Tiny3PipeAVX2 between the call that runs its rounds
// and the one that finishes its MACs. It holds no pointers: it outlives a call, and the callers'
// buffers may lie on a goroutine stack, which moves.
type chachaTinyPipe [chachaTinyLanes]chachaTinyPipeLane

// chachaPoly1305Tiny3PipeAVX2 is chachaPoly1305Tiny3AVX2 as a pipeline stage: it runs the rounds
// of lanes' three ops (none where lanes is nil; at most chachaTinyPipeAD bytes of AD each) and
// stages their MACs in cur (Seal writes each ciphertext), and beside the rounds finishes the MACs
// of the triple in prev (if not nil), staged by the call before, whose dst and tag out gives: Seal
// writes their tags, Open writes a lane's dst only once its tag matched. It returns bit i set
// where prev's lane i succeeded.
//
//go:noescape
func chachaPoly1305Tiny3PipeAVX2(lanes *[chachaTinyLanes]chachaTinyLane, cur, prev *chachaTinyPipe,
	out *[chachaTinyLanes]chachaTinyLane, open bool) (ok uint8)

// tinyPipeline is the state of the three-op kernel's pipeline: its two triples in turns, the one
// whose MACs wait (waiting, at pipe[next^1]) and those ops' indexes.
type tinyPipeline struct {
	pipe    [2]chachaTinyPipe
	next    int // the triple the next call stages
	waiting bool
	idx     [chachaTinyLanes]int
}

var tinyPipelines = sync.Pool{New: func() any { return new(tinyPipeline) }}

// tinyOps runs the tiny ops of one batch that runs on the standard library on tier t's fused
// kernels (the AVX2 tier's, on 1-cycle cores): run takes an op that fits one, and flush runs what
// run has queued. It holds the ops' indexes, not pointers to them, so that a batch on the stack
// stays there.
type tinyOps struct {
	fused bool
	open  bool
	// maxAD is the longest AD of an op that fits: chachaFusedAD, beside the lanes chachaTinyAD.
	maxAD  int
	wide   bool                 // took beside the lanes: every op that fits, not only within block 1
	queued [chachaTinyLanes]int // ops within block 1, waiting for a full chachaPoly1305Tiny3AVX2 call
	n      int
	// pastOps: the ops past block 1 of up to pastMax bytes run pastOps to a call too, queued in
	// past until there are as many: three on AVX-512 (chachaPoly1305Tiny3AVX512,
	// impl.chachaTiny3AVX512), two on AVX2 (chachaPoly1305Tiny2AVX2, impl.chachaTiny2AVX2), else
	// none (pastOps and pastMax 0: each alone).
	pastOps, pastMax int
	past             [chachaTinyLanes]int
	np               int
	// pipeline: the three-op calls whose ops' AD fits chachaTinyPipeAD run as a pipeline (piped),
	// each beside the MACs of the one before (planPipeline).
	pipeline bool
	piped    *tinyPipeline
}

// chachaTinyPipeAD is the most AD of an op of the pipeline (chachaPoly1305Tiny3PipeAVX2), which
// stages it whole. chachaTinyPipeMin is the fewest ops that the pipeline needs to take in a batch
// to run: it overlaps each triple's MACs with the next triple's rounds, and the last triple's run
// alone; with two triples, its set-up (the pool's state, staged MAC inputs, one more call) cost
// more than the one overlap gives back. AMD Zen 4 with AVX-512 hidden, ns an op, a pipeline from a
// batch's second triple on: 6 x 64 B 87 -> 97, 9 x level, 18 x 88 -> 81 (docs/experiments.md,
// 2026-12-06 twelfth session).
const (
	chachaTinyPipeAD  = 64
	chachaTinyPipeMin = 9
)

// planPipeline lets q's three-op calls run as a pipeline where at least chachaTinyPipeMin ops of
// ops would take them.
func (q *tinyOps) planPipeline(ops []Op) {
	if !q.fused || len(ops) < chachaTinyPipeMin {
		return
	}
	k := 0
	for i := range ops {
		if op := &ops[i]; op.Key.suite.isChaCha() && len(op.AD) <= chachaTinyPipeAD {
			if _, ok := q.inTriple(op); ok {
				k++
			}
		}
	}
	q.pipeline = k >= chachaTinyPipeMin
}

func newTinyOps(t Tier, open bool) tinyOps {
	q := tinyOps{fused: tinyFused(t), open: open, maxAD: chachaFusedAD}
	switch {
	case !q.fused:
	case impl.chachaTiny3AVX512:
		q.pastOps, q.pastMax = chachaTinyLanes, chachaTinyMax
	case impl.chachaTiny2AVX2:
		q.pastOps, q.pastMax = 2, chachaTinyPairMax
	}
	return q
}

// fits reports whether a fused kernel takes op, and op's message length. An Open shorter than the
// tag is left to the caller.
func (q *tinyOps) fits(op *Op) (n int, ok bool) { return fitsTiny(q.fused, op, q.open, q.maxAD) }

// tinyFused reports whether tier t has fused kernels for tiny ops here.
func tinyFused(t Tier) bool { return t == AVX2 && impl.chachaTinyFused }

// fitsTiny is tinyOps.fits for fused (tinyFused) and ops with up to maxAD bytes of AD.
func fitsTiny(fused bool, op *Op, open bool, maxAD int) (n int, ok bool) {
	n = msgLen(op, open)
	return n, fused && n >= 0 && n <= chachaTinyMax && len(op.AD) <= maxAD
}

// inTriple reports whether the three-op kernel takes op (fits, within block 1), and op's message
// length.
func (q *tinyOps) inTriple(op *Op) (n int, ok bool) {
	n, ok = q.fits(op)
	return n, ok && n <= chachaTinyLaneMax
}

// took reports whether q, if not nil, has taken op beside the lanes (chachaRunRoute): the ops
// within block 1 and, where they run three to a call, those of up to chachaTiny3Beside bytes; if q
// is wide every op that fits.
func (q *tinyOps) took(op *Op) bool {
	if q == nil {
		return false
	}
	n, ok := q.fits(op)
	return ok && (q.wide || q.besideAlways(n))
}

// besideAlways reports whether an op of n bytes that the fused kernels take runs beside the lanes
// however many such ops a batch has: within block 1 and, where they run three to a call, up to
// chachaTiny3Beside bytes.
func (q *tinyOps) besideAlways(n int) bool {
	return n <= chachaTinyLaneMax || q.pastOps == chachaTinyLanes && n <= chachaTiny3Beside
}

// chachaTiny3Beside is the longest message that a batch on the lanes runs beside them wherever
// chachaPoly1305Tiny3AVX512 runs, however many there are: its four blocks an op against the lanes'
// three for 65-128 bytes, but a lane group's share of idle lanes and vector MAC set-up against a
// scalar MAC of a few blocks. Longer ones stay in the lanes where they fill a group (the ops past
// the lanes' whole groups run on the fused kernels anyway). AMD Zen 4, against x/crypto, seal /
// open, whole groups in the lanes -> beside: 16 x 80 B 1.38x / 1.40x -> 1.51x / 1.52x, 47 x 80 B
// 1.46x / 1.45x -> 1.57x / 1.56x, 16 x 96 B 1.39x / 1.44x -> 1.48x / 1.49x, 32 x 96 B 1.52x /
// 1.58x -> 1.53x / 1.53x; but 32 x 112 B 1.55x / 1.59x -> 1.49x / 1.50x, 32 x 128 B 1.61x / 1.64x
// -> 1.51x / 1.48x (docs/experiments.md, 2026-12-07 fourth session).
const chachaTiny3Beside = 96

// chooseBeside decides which of the ChaCha-family ops of ops q takes beside the lanes and returns
// how many: those within block 1 and, where they run three to a call, those of up to
// chachaTiny3Beside bytes, and where fewer than 16 others fit, those too (q becomes wide). Sixteen
// of them fill a lane group, where the lanes run them faster than the one-op kernel does; fewer
// share their groups with longer messages and hold a lane each for the longest one's pass. Only
// ops with up to chachaTinyAD bytes of AD: the lanes' vector MAC takes longer AD faster (AMD Zen
// 4, 20 and 40 x 64 B with 256 or 512 B of AD, 1.47-1.75x in the lanes, 1.25-1.44x beside).
func (q *tinyOps) chooseBeside(ops []Op) (n int) {
	q.maxAD = chachaTinyAD
	past, wider := 0, 0
	for i := range ops {
		if op := &ops[i]; op.Key.suite.isChaCha() {
			m, ok := q.fits(op)
			switch {
			case !ok:
			case m <= chachaTinyLaneMax:
				n++
			case q.besideAlways(m):
				wider++
			default:
				past++
			}
		}
	}
	q.pipeline = n >= chachaTinyPipeMin
	n += wider
	if past < 16 {
		q.wide, n = true, n+past
	}
	return n
}

// run takes ops[i], which fits a fused kernel with its n-byte message (fits), and returns how many
// ops failed of those run by this call (ops[i] itself may wait in the queue).
func (q *tinyOps) run(ops []Op, i, n int) (failed int) {
	if n > chachaTinyLaneMax {
		if n > q.pastMax {
			return q.one(&ops[i], n)
		}
		q.past[q.np] = i
		if q.np++; q.np < q.pastOps {
			return 0
		}
		q.np = 0
		return q.lanes(ops, q.past[:q.pastOps], true)
	}
	q.queued[q.n] = i
	if q.n++; q.n < chachaTinyLanes {
		return 0
	}
	q.n = 0
	return q.lanes(ops, q.queued[:], false)
}

// runFusedAlone runs op, a ChaCha-family op on its own on route r (runSmall), on a fused one-call
// kernel if one takes it, and returns how many failed: r.tiny's where op fits it (tinyOps.fits; with
// no other op to share a call, op does not wait in the queue), or the kernel of blocks 4-13 (Open:
// 4-17) or the long one where r's one-op path takes op for it (oneOps.takesSmall, takesLong).
// Going straight to the kernel rather than through the one-op path's layers saves a lone 256-byte
// op about 16 ns of 225 (AMD Zen 4, docs/experiments.md, 2026-12-04 fourth session).
func (r *route) runFusedAlone(op *Op, open bool) (taken bool, failed int) {
	// Not through a tinyOps: building one costs a lone op of 64-192 bytes 2-4% of its time.
	n, ok := fitsTiny(tinyFused(r.tiny), op, open, chachaFusedAD)
	k := tinyFusedKernel()
	if !ok {
		switch {
		case r.one.tier != AVX512:
			return false, 0
		case smallFused(n, open) && r.one.takesSmall(op, n, open, false):
			k = fusedSmallAVX512
		case r.one.takesLong(op, n, open, false):
			k = fusedLongAVX512
		default:
			return false, 0
		}
	}
	if chachaFusedOp(op, open, n, k) {
		return true, 0
	}
	return true, 1
}

// flush runs the queued ops of ops, finishes the pipeline and returns how many failed. Where the
// ops past block 1 run several to a call, the ops left in the two queues do too, as many as fit a
// call (two or three on AVX-512, two on AVX2) with the last one alone; else one to a call.
func (q *tinyOps) flush(ops []Op) (failed int) {
	var left [2 * (chachaTinyLanes - 1)]int
	k := copy(left[:], q.queued[:q.n])
	k += copy(left[k:], q.past[:q.np])
	q.n, q.np = 0, 0
	if q.pastOps > 0 && k >= 2 {
		m := min(k, q.pastOps)
		failed += q.lanes(ops, left[k-m:k], true)
		k -= m
	}
	for _, i := range left[:k] {
		failed += q.one(&ops[i], msgLen(&ops[i], q.open))
	}
	if p := q.piped; p != nil {
		failed += q.pipeStage(ops, nil)
		clear(p.pipe[:])
		p.next = 0
		tinyPipelines.Put(p)
		q.piped = nil
	}
	return failed
}

// pipeStage runs one call of the pipeline: the rounds of lanes (nil: none) and the MACs of the
// triple waiting before it, whose failed Opens it counts.
func (q *tinyOps) pipeStage(ops []Op, lanes *[chachaTinyLanes]chachaTinyLane) (failed int) {
	p := q.piped
	cur, prev := &p.pipe[p.next], (*chachaTinyPipe)(nil)
	var out [chachaTinyLanes]chachaTinyLane // the waiting ops' dst and tag
	if p.waiting {
		prev = &p.pipe[p.next^1]
		for i, j := range p.idx[:] {
			op := &ops[j]
			out[i].dst, out[i].tag = unsafe.SliceData(op.Dst), tinyTag(op, msgLen(op, q.open), q.open)
		}
	}
	ok := chachaPoly1305Tiny3PipeAVX2(lanes, cur, prev, &out, q.open)
	if q.open && p.waiting {
		failed = tinyVerdicts(ops, p.idx[:], ok)
	}
	p.waiting = lanes != nil
	if p.waiting {
		p.idx = q.queued
		p.next ^= 1
	}
	return failed
}

// one runs op (n bytes of message) on chachaPoly1305TinyAVX2 and returns 1 if it failed.
func (q *tinyOps) one(op *Op, n int) (failed int) {
	if chachaTinyFusedOp(op, q.open, n) {
		return 0
	}
	return 1
}

// lanes runs the ops ops[idx[i]] in one call, and returns how many failed: three within block 1 on
// chachaPoly1305Tiny3AVX2 (or its pipeline), or where past (the ops past block 1, or those left at
// a batch's end) as q.pastOps says: two on chachaPoly1305Tiny2AVX2, or two or three on
// chachaPoly1305Tiny2AVX512 or chachaPoly1305Tiny3AVX512.
func (q *tinyOps) lanes(ops []Op, idx []int, past bool) (failed int) {
	var lanes [chachaTinyLanes]chachaTinyLane
	var sub [chachaTinyLanes][8]uint32
	var xnonce [chachaTinyLanes][12]byte
	// XChaCha20's subkeys (HChaCha20 of the key and the nonce's first 16 bytes) in one call when
	// each of three ops needs one, as in a batch of one suite; else each op its own.
	allX := len(idx) == chachaTinyLanes
	var keys [chachaTinyLanes]*[8]uint32
	var nonces [chachaTinyLanes]*[16]byte
	for i, j := range idx {
		op := &ops[j]
		if !allX || op.Key.suite != XChaCha20Poly1305 {
			allX = false
			break
		}
		keys[i], nonces[i] = &op.Key.chacha, (*[16]byte)(op.Nonce)
	}
	if allX {
		hchacha20x3AVX2(&sub, &keys, &nonces)
	}
	for i, j := range idx {
		op := &ops[j]
		n := msgLen(op, q.open)
		key, nonce := &op.Key.chacha, (*[12]byte)(op.Nonce)
		if op.Key.suite == XChaCha20Poly1305 {
			// The ChaCha20 nonce: 4 zero bytes, then the XChaCha20 nonce's last 8.
			key = &sub[i]
			if !allX {
				key, _ = chachaOpKey(op, &sub[i], true)
			}
			copy(xnonce[i][4:], op.Nonce[16:24])
			nonce = &xnonce[i]
		}
		// Field by field into the array itself: stores through a pointer to its element would be
		// taken for stores to the heap (sub and xnonce would move there), and a composite literal
		// is built on the stack and copied over in 16-byte moves, each waiting for the two 8-byte
		// stores it spans.
		lanes[i].key, lanes[i].nonce = key, nonce
		lanes[i].dst, lanes[i].src, lanes[i].n = unsafe.SliceData(op.Dst), unsafe.SliceData(op.Src), n
		lanes[i].ad, lanes[i].adLen = unsafe.SliceData(op.AD), len(op.AD)
		lanes[i].tag = tinyTag(op, n, q.open)
	}
	switch {
	case past:
		// Called directly, not through a func value, whose argument would escape: lanes holds
		// pointers to sub and xnonce, which would move to the heap with it.
		var ok uint8
		switch {
		case q.pastOps == 2:
			ok = chachaPoly1305Tiny2AVX2(&lanes, q.open)
		case len(idx) == 2:
			ok = chachaPoly1305Tiny2AVX512(&lanes, q.open)
		default:
			ok = chachaPoly1305Tiny3AVX512(&lanes, q.open)
		}
		if q.open {
			failed = tinyVerdicts(ops, idx, ok)
		}
	case q.pipeline && q.fitsPipe(ops):
		if q.piped == nil {
			q.piped = tinyPipelines.Get().(*tinyPipeline)
		}
		failed = q.pipeStage(ops, &lanes) // the triple before this one's
	case q.open:
		failed = tinyVerdicts(ops, idx, chachaPoly1305Tiny3AVX2(&lanes, true))
	default:
		chachaPoly1305Tiny3AVX2(&lanes, false)
	}
	clear(sub[:])
	return failed
}

// tinyVerdicts settles the Opens ops[idx[i]] of a three-op call from its result ok (bit i set where
// op i's tag matched): the others fail with Dst zeroed. It returns how many failed.
func tinyVerdicts(ops []Op, idx []int, ok uint8) (failed int) {
	for i, j := range idx {
		if op := &ops[j]; ok>>i&1 == 0 {
			failOpen(op)
			failed++
		} else {
			op.Err = nil
		}
	}
	return failed
}

// tinyTag returns where a Seal writes the tag of op (n bytes of message), after the ciphertext, or
// where an Open reads it.
func tinyTag(op *Op, n int, open bool) *[TagSize]byte {
	if open {
		return (*[TagSize]byte)(op.Src[n:])
	}
	return (*[TagSize]byte)(op.Dst[n:])
}

// fitsPipe reports whether the pipeline takes the queued ops of ops: AD of at most chachaTinyPipeAD
// bytes each.
func (q *tinyOps) fitsPipe(ops []Op) bool {
	for _, j := range q.queued[:] {
		if len(ops[j].AD) > chachaTinyPipeAD {
			return false
		}
	}
	return true
}

// hchacha20x3AVX2 writes the HChaCha20 subkeys of keys[i] and nonces[i] to out[i]: three states'
// rounds interleaved, in about 1.4 times hchacha20AVX2's time for one.
//
//go:noescape
func hchacha20x3AVX2(out *[chachaTinyLanes][8]uint32, keys *[chachaTinyLanes]*[8]uint32, nonces *[chachaTinyLanes]*[16]byte)
