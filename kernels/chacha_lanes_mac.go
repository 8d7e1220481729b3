// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package kernels

import (
	"math/bits"
	"unsafe"
)

// Long groups with the MAC beside the stream (laneKernels.stitchedMAC). On cores whose vector
// integer instructions have a 1-cycle latency, the AVX2 register lane kernel keeps the vector pipes
// busy and leaves the scalar ones idle, and one Poly1305 chain of radix-2^64 steps (MULX) fits
// beside its rounds at about three blocks a double round, nearly as many as a group's stream
// produces: the ciphertext blocks of a group of 16 ops ride along with another group's stream
// calls, where the vector Poly1305 lanes would take some 30% of the group's time on their own
// (docs/experiments.md, 2026-12-05). So the long groups run as a pipeline:
//
//	Seal: group g's key blocks (0 and 1) and stream with MAC(g-1) beside them, then MAC(g-1)'s
//	      rest and tags; the last group's MAC on the vector lanes, and with vectorLanes each
//	      group's first lanes' MAC (the zmm stream is too fast for one chain to keep up with all).
//	Open: group 0's MAC on the vector lanes; stream(g-1) (its ops verified) and group g+1's key
//	      blocks with MAC(g) beside them, then MAC(g)'s rest and tags, and with vectorLanes group
//	      g's first lanes' MAC on the vector lanes; the last group's stream alone.
//
// Open thus still authenticates each op before any of its plaintext is written (section 2.8). Open
// keeps two lane tables, since group g+1's key blocks are computed while group g's lanes wait to
// be decrypted. The AD, the ciphertext's padded tail and the lengths block are absorbed in Go (a few
// blocks an op).

// laneMAC is the Poly1305 state streamMACKernel runs beside its lanes: the whole blocks of lanes
// messages, size bytes each, one chain after the other. The generator (_asm/chacha) hard-codes
// this layout.
type laneMAC struct {
	done  uintptr            // bytes of lane's blocks absorbed
	lane  int                // the lane whose chain runs
	lanes int                // lanes with blocks
	size  uintptr            // bytes of blocks per lane, a multiple of 16
	end   uintptr            // the kernels' own, while a call runs: the end of lane's blocks,
	r     [2]uint64          // and lane's r
	mac   [16]poly1305       // each lane's one-time key and accumulator
	msg   [16]unsafe.Pointer // each lane's first block
}

// streamMACGeneric is the portable contract of streamMACKernel: chachaLanesGeneric's with n >= 1
// (absorbing none of mac's blocks, which a kernel may absorb any number of, in order); with n = 0
// it absorbs all of mac's blocks that are left.
func streamMACGeneric(tab *streamTable, lanes *chachaPtrs16, n, stride int, upper bool, m *laneMAC) {
	if n > 0 {
		chachaLanesGeneric(tab, lanes, n, stride, upper)
		return
	}
	for ; m.lane < m.lanes; m.lane, m.done = m.lane+1, 0 {
		blocks := unsafe.Slice((*byte)(m.msg[m.lane]), m.size)
		m.mac[m.lane].blocks(blocks[m.done:])
	}
}

// startMAC readies m for the ops of group from lane first on (of n bytes), whose one-time keys
// the lanes' scratch blocks of t hold: their keys and padded ADs absorbed, their ciphertexts'
// whole blocks for the kernels. Chain lane j is the group's lane first+j.
func (c *chachaChunkState) startMAC(m *laneMAC, t *streamTable, group []uint8, first, n int) {
	*m = laneMAC{lanes: len(group) - first, size: uintptr(n &^ 15)}
	if n < 16 || m.lanes == 0 {
		m.lanes, m.size = 0, 0
	}
	for j, i := range group[first:] {
		mac := &m.mac[j]
		mac.init(t.scratch[first+j][:32])
		mac.writePadded(c.op[i].AD)
		if n >= 16 {
			m.msg[j] = unsafe.Pointer(&c.ciphertext(int(i))[0])
		}
	}
}

// finishMAC absorbs what is left of m's blocks, each op's padded tail and lengths, and writes
// (Seal) or checks (Open) the tags of group's ops from lane first on (startMAC's). It returns the
// group's lanes whose op succeeded and wipes m.
func (c *chachaChunkState) finishMAC(m *laneMAC, group []uint8, first, n int) (ok uint32) {
	streamMACKernel(c.k, nil, nil, 0, 0, len(group) > 8, m)
	for j, i := range group[first:] {
		mac := &m.mac[j]
		ct := c.ciphertext(int(i))
		mac.writePadded(ct[n&^15:])
		if c.finishTag(int(i), mac.aeadTag(len(c.op[i].AD), n)) {
			ok |= 1 << (first + j)
		}
	}
	*m = laneMAC{}
	return ok
}

// Where the chain takes only some of a group's lanes (laneKernels.vectorLanes), the pipeline
// gains on long messages alone: each chained op costs some Go (its AD, tail and tag through
// poly1305) that short messages do not repay. An Open pipeline of two groups has one chained
// group only, whose gain its first group's MAC, on the vector lanes alone, gives back.
// AMD Zen 4, 64 ops against x/crypto, unpipelined -> pipelined, seal: 1152-1420 B with 16-128 B of
// AD 1.49-1.61x -> 1.55-1.61x, 256 B 1.54-1.63x -> 1.43-1.48x, 1420 B with 1024 B of AD 1.84x ->
// 1.55x (docs/experiments.md, 2026-12-05 fifth session); open with 8 B of AD, medians of 5 runs
// (BenchmarkChaChaPipeline): 64 x 1420 B 1.39x -> 1.41x, 64 x 4096 B 1.26x -> 1.35x, 48 x 1420 B
// 1.38x -> 1.40x, but 32 x 1420 B 1.35-1.39x -> 1.34-1.35x in 3 runs (ninth session).
const (
	vectorLanesMinLen     = 1152 // the shortest message whose long groups pipeline with vectorLanes
	vectorLanesMaxAD      = 128  // and the most AD
	vectorLanesOpenGroups = 3    // and the fewest groups of an Open
)

// stitchedGroups reports whether a chunk's long groups (of n-byte messages with ad bytes of AD)
// run as the pipeline above on kernel set k: two groups or more, with the stitched MAC, and with
// vectorLanes only messages of vectorLanesMinLen bytes or more with at most vectorLanesMaxAD of AD,
// in vectorLanesOpenGroups groups or more for Opens.
func stitchedGroups(k laneKernels, groups int, open bool, n, ad int) bool {
	if !k.stitchedMAC || groups < 2 {
		return false
	}
	return k.vectorLanes == 0 || n >= vectorLanesMinLen && ad <= vectorLanesMaxAD && (!open || groups >= vectorLanesOpenGroups)
}

// runLongGroupsStitched is runLongGroups as the pipeline above, for two groups or more.
func (c *chachaChunkState) runLongGroupsStitched(s *streamLanes, p *polyLanes) (failed int) {
	var starts [chachaChunk/8 + 1]int
	for k, size := range c.groups[:c.ngroups] {
		starts[k+1] = starts[k] + int(size)
	}
	group := func(k int) []uint8 { return c.order[starts[k]:starts[k+1]] }
	n, ad := c.msgLen(int(c.order[0])), len(c.op[c.order[0]].AD) // every long group's
	last := c.ngroups - 1
	// Group k's lanes below split(k) take the vector lanes (laneKernels.vectorLanes), the others
	// the chain.
	split := func(k int) int { return min(c.k.vectorLanes, len(group(k))) }
	var macs [2]laneMAC
	// vectorKeys readies the vector lanes for the MAC of group k's lanes below m from their keys in
	// t's scratch (which a stream's tail may overwrite); vectorMAC then runs it.
	vectorKeys := func(k, m int, t *streamTable) {
		for l, i := range group(k)[:m] {
			p.setKey(l, (*[32]byte)(t.scratch[l][:32]), c.wantTag(int(i)))
			p.ad[l], p.ct[l] = c.op[i].AD, c.ciphertext(int(i))
		}
	}
	vectorMAC := func(k, m int) (ok uint32) {
		if m == 0 {
			return 0
		}
		p.macGroup(c.k, m, n, ad)
		return p.finishGroup(c, group(k)[:m])
	}
	s.start(c.k)
	if !c.open {
		// Group k's key blocks and stream with group k-1's chain beside them; the last group's MAC
		// on the vector lanes, and so the other groups' lanes below split.
		for k := range c.ngroups {
			var beside *laneMAC
			if k > 0 {
				beside = &macs[(k-1)%2]
			}
			c.keyBlocks(s, group(k), n, true, beside)
			t := s.tab()
			vector := len(group(k))
			if k < last {
				vector = split(k)
				c.startMAC(&macs[k%2], t, group(k), vector, n)
			}
			vectorKeys(k, vector, t)
			if !c.block1InPlace(s, n) {
				c.xorBlock1(t, group(k), 1<<len(group(k))-1)
			}
			c.streamGroup(s, group(k), n, 2, 0, beside)
			if k > 0 {
				failed += len(group(k-1)) - split(k-1) - bits.OnesCount32(c.finishMAC(beside, group(k-1), split(k-1), n))
			}
			failed += vector - bits.OnesCount32(vectorMAC(k, vector))
		}
	} else {
		// Group 0's MAC on the vector lanes; group k's MAC beside group k-1's stream (its ops
		// verified) and group k+1's key blocks; the last group's stream on its own. Group k's
		// lanes are lanes[k%2]: group k+1's key blocks come before group k's stream.
		s2 := streamLanes{t: s.spare}
		s2.start(c.k)
		lanes := [2]*streamLanes{s, &s2}
		// late(k): group k's block 1 runs in place with its later blocks, as runLongGroups's do.
		late := func(k int) bool { return c.lateBlock1(s, group(k), n) }
		// decrypt XORs group k's key stream into its verified ops from block 1 on, with mac beside.
		decrypt := func(k int, verified uint32, mac *laneMAC) {
			ls, from := lanes[k%2], 1
			if !late(k) {
				c.xorBlock1(ls.tab(), group(k), verified)
				from = 2
			}
			c.streamGroup(ls, group(k), n, from, verified, mac)
		}
		c.keyBlocks(s, group(0), n, !late(0), nil)
		vectorKeys(0, len(group(0)), s.tab())
		verified := vectorMAC(0, len(group(0)))
		failed += len(group(0)) - bits.OnesCount32(verified)
		c.keyBlocks(&s2, group(1), n, !late(1), nil)
		c.startMAC(&macs[1], s2.tab(), group(1), split(1), n)
		for k := 1; k <= last; k++ {
			mac := &macs[k%2]
			decrypt(k-1, verified, mac)
			if k < last {
				ls := lanes[(k+1)%2]
				c.keyBlocks(ls, group(k+1), n, !late(k+1), mac)
				c.startMAC(&macs[(k+1)%2], ls.tab(), group(k+1), split(k+1), n)
			}
			vectorKeys(k, split(k), lanes[k%2].tab())
			verified = vectorMAC(k, split(k)) | c.finishMAC(mac, group(k), split(k), n)
			failed += len(group(k)) - bits.OnesCount32(verified)
		}
		decrypt(last, verified, nil)
		*s2.tab() = streamTable{}
	}
	*s.tab() = streamTable{}
	p.wipe()
	return failed
}
