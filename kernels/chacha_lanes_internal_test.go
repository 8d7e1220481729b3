// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package kernels

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"runtime"
	"runtime/debug"
	"slices"
	"testing"
	"unsafe"
)

// portableLaneSets are the driver configurations the portable kernels run in the tests: each table
// format and stream contract the architectures' kernel sets use (amd64: AVX2 unmasked in radix 2^26,
// with last blocks apart on the register kernels, AVX512 masked in radix 2^44 with IFMA and in radix
// 2^26 without), with and without a few-ops path,
// with long messages taken one at a time beside the lanes (longAlone), with the stitched MAC
// on all of a group's lanes (AVX2) or beside vector lanes 0-7 (AVX512 with IFMA), and with a
// chunk's shapes in long groups of their own (shapeGroups).
var portableLaneSets = []struct {
	name string
	k    laneKernels
}{
	{"unmasked-radix26", laneKernels{simd: Generic, fewOps: 7}},
	{"unmasked-radix26-lastapart", laneKernels{simd: Generic, lastApart: true, fewOps: 7}},
	{"unmasked-radix26-stitched", laneKernels{simd: Generic, lastApart: true, fewOps: 7, stitchedMAC: true}},
	{"masked-radix44", laneKernels{simd: Generic, masked: true, lastApart: true, radix44: true}},
	{"masked-radix44-stitched", laneKernels{simd: Generic, masked: true, lastApart: true, radix44: true, stitchedMAC: true, vectorLanes: 8}},
	{"masked-radix26", laneKernels{simd: Generic, masked: true, lastApart: true, fewOps: 7}},
	{"unmasked-radix44", laneKernels{simd: Generic, radix44: true}},
	{"masked-radix44-longalone", laneKernels{simd: Generic, masked: true, lastApart: true, radix44: true, fewOps: 7, longAlone: 1000}},
	{"masked-radix44-stitched-shapes", laneKernels{simd: Generic, masked: true, lastApart: true, radix44: true, fewOps: 11, stitchedMAC: true, vectorLanes: 8, shapeGroups: true}},
	{"unmasked-radix26-shapes", laneKernels{simd: Generic, lastApart: true, fewOps: 7, shapeGroups: true}},
}

// TestChaChaLanesPortable runs the lane driver on the portable kernels, on every build, against the
// Generic tier: random batches of lengths 0 to 2000, and batches of mostly or only one length that
// take the short and the long groups; mixed keys of both suites, in place or not, and Opens of
// which some are tampered with.
func TestChaChaLanesPortable(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	keys := laneTestKeys(t, rng)
	rounds := 30
	if testing.Short() {
		rounds = 6
	}
	for _, set := range portableLaneSets {
		t.Run(set.name, func(t *testing.T) {
			for round := range rounds {
				for _, size := range []int{1, 5, 8, 16, 17, 33, 64, 65, 100} {
					checkLanesPortable(t, set.k, keys, size, round%shapeCount, rng)
				}
			}
		})
	}
}

// TestChaChaLongGroupsBounds runs messages that take more than one kernel call per stage on the
// portable kernels: in long groups (17 and 24 ops of one length: groups of 16 and 1, 16 and 8) and
// through the lanes' segments (17 ops of two lengths).
func TestChaChaLongGroupsBounds(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	keys := laneTestKeys(t, rng)
	for _, set := range portableLaneSets {
		for _, size := range []int{17, 24} {
			checkLanesPortable(t, set.k, keys, size, shapeHuge, rng)
		}
		checkLanesPortable(t, set.k, keys, 17, shapeHugeMixed, rng)
	}
}

// laneTestKeys returns 6 random keys, of both suites.
func laneTestKeys(t *testing.T, rng *rand.Rand) []*Key {
	t.Helper()
	var keys []*Key
	for i := range 6 {
		raw := make([]byte, 32)
		for j := range raw {
			raw[j] = byte(rng.Uint32())
		}
		s := ChaCha20Poly1305
		if i%2 == 1 {
			s = XChaCha20Poly1305
		}
		k, err := NewKey(s, raw)
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k)
	}
	return keys
}

// Batch shapes of checkLanesPortable.
const (
	shapeRandom    = iota // lengths 0 to 2000, a third of them below 130, half with AD
	shapeShort            // one length of at most one block, without AD: the short groups
	shapeLong             // mostly one length above one block and one AD length, the rest random
	shapeUniform          // one length and one AD length: the long groups
	shapeSeveral          // mostly three lengths of one AD length each (one within a block, one of half the ops), the rest random
	shapeCount            // the number of shapes above
	shapeHuge             // one length past the bounds of one kernel call (64 KiB per lane)
	shapeHugeMixed        // shapeHuge, every other op one block longer: the lanes' segments
)

// checkLanesPortable seals and opens one random batch of size ops of the shape on kernel set k and
// on the Generic tier and compares every output and verdict.
func checkLanesPortable(t *testing.T, k laneKernels, keys []*Key, size, shape int, rng *rand.Rand) {
	t.Helper()
	short, long, adLen := rng.IntN(65), 65+rng.IntN(2000), rng.IntN(40)
	if rng.IntN(2) == 0 {
		long &^= 1<<(4+2*rng.IntN(2)) - 1 // whole 16-byte or 64-byte blocks
		long = max(long, 128)
	}
	mixed := shape == shapeHugeMixed
	if shape == shapeHuge || mixed {
		long += maxPolyBlocks * 16
		shape = shapeUniform
	}
	uniform := long
	if rng.IntN(3) == 0 {
		uniform = short
	}
	several := [3]int{long, 65 + rng.IntN(2000), short}
	severalAD := [3]int{adLen, rng.IntN(40), rng.IntN(2) * (1 + rng.IntN(40))}
	type input struct {
		key            *Key
		nonce, ad, msg []byte
		inPlace        bool
	}
	// Half the batches of several shapes have ChaCha20 ops only, whose ops left over beside the
	// shapes' groups run one at a time (shapeGroups; a chunk with XChaCha20 ops keeps the segments).
	chachaOnly := shape == shapeSeveral && rng.IntN(2) == 0
	in := make([]input, size)
	for i := range in {
		key := keys[rng.IntN(len(keys))]
		if chachaOnly {
			key = keys[2*rng.IntN(len(keys)/2)] // laneTestKeys: ChaCha20 at the even indexes
		}
		n := rng.IntN(2001)
		var ad []byte
		switch {
		case shape == shapeShort:
			n = short
		case shape == shapeUniform:
			n, ad = uniform, randomBytes(rng, adLen)
			if mixed && i%2 == 1 {
				n += 64
			}
		case shape == shapeLong && rng.IntN(4) != 0:
			n, ad = long, randomBytes(rng, adLen)
		case shape == shapeSeveral && rng.IntN(8) != 0:
			k := [4]int{0, 0, 1, 2}[rng.IntN(4)] // the first shape some 12-14 ops of 33, 28 of 64
			n, ad = several[k], randomBytes(rng, severalAD[k])
		case rng.IntN(3) == 0:
			n = rng.IntN(130)
		}
		if shape != shapeShort && ad == nil && rng.IntN(2) == 0 {
			ad = randomBytes(rng, rng.IntN(40))
		}
		in[i] = input{key, randomBytes(rng, key.suite.NonceSize()), ad, randomBytes(rng, n), rng.IntN(2) == 0}
	}
	// ops returns a batch over fresh buffers: srcs (plaintexts or ciphertexts) at an odd offset, Dst
	// in place or not.
	ops := func(srcs [][]byte, open bool) []Op {
		ops := make([]Op, size)
		for i, c := range in {
			n := len(srcs[i])
			out := n + TagSize
			if open {
				out = n - TagSize
			}
			buf := make([]byte, max(n, out)+3)[3:]
			copy(buf, srcs[i])
			dst := buf[:out]
			if !c.inPlace {
				dst = make([]byte, out)
			}
			ops[i] = Op{Key: c.key, Nonce: c.nonce, AD: c.ad, Src: buf[:n], Dst: dst}
		}
		return ops
	}
	plains := make([][]byte, size)
	for i, c := range in {
		plains[i] = c.msg
	}
	got, want := ops(plains, false), ops(plains, false)
	checkLaneMemoryWiped(t, func() { chachaRunLanes(k, got, false, nil) })
	Generic.Seal(want)
	cts := make([][]byte, size)
	for i := range got {
		if !bytes.Equal(got[i].Dst, want[i].Dst) {
			t.Fatalf("Seal op %d of %d (%d bytes, AD %d): lanes differ from Generic", i, size, len(plains[i]), len(in[i].ad))
		}
		cts[i] = bytes.Clone(want[i].Dst)
		if rng.IntN(4) == 0 { // tamper with the ciphertext or the tag
			cts[i][rng.IntN(len(cts[i]))] ^= 1 << rng.IntN(8)
		}
	}
	got, want = ops(cts, true), ops(cts, true)
	for i := range got {
		got[i].Err, want[i].Err = fmt.Errorf("unset"), fmt.Errorf("unset")
	}
	var failedGot int
	checkLaneMemoryWiped(t, func() { failedGot = chachaRunLanes(k, got, true, nil) })
	failedWant := Generic.Open(want)
	if failedGot != failedWant {
		t.Fatalf("Open: %d failed on the lanes, %d on Generic", failedGot, failedWant)
	}
	for i := range got {
		if (got[i].Err == nil) != (want[i].Err == nil) || !bytes.Equal(got[i].Dst, want[i].Dst) {
			t.Fatalf("Open op %d of %d (%d bytes): lanes (err %v) differ from Generic (err %v)", i, size,
				len(cts[i]), got[i].Err, want[i].Err)
		}
	}
}

// checkLaneMemoryWiped runs batch, which runs the lanes, and fails t unless the laneMemory it put
// back into laneMemories is all zero: the next batch's tables start from it, and no key material
// may outlive a batch. With one P (sync.Pool's per-P slot) and no garbage collection (which empties
// pools), the batch takes the memory put back just before (under the race detector, which drops
// some of what a pool is given, perhaps another).
func checkLaneMemoryWiped(t *testing.T, batch func()) {
	t.Helper()
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	mem := laneMemories.Get().(*laneMemory)
	laneMemories.Put(mem)
	batch()
	b := unsafe.Slice((*byte)(unsafe.Pointer(mem)), unsafe.Sizeof(*mem))
	if i := slices.IndexFunc(b, func(x byte) bool { return x != 0 }); i >= 0 {
		t.Fatalf("byte %d of the laneMemory the batch put back is not zero", i)
	}
}

func randomBytes(rng *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}

// TestStitchedGroups checks which long groups pipeline: on the AVX2 class's set (all lanes on the
// chain) every chunk of two groups or more; with vector lanes beside the chain only messages of
// vectorLanesMinLen bytes or more with at most vectorLanesMaxAD bytes of AD, Opens in
// vectorLanesOpenGroups groups or more.
func TestStitchedGroups(t *testing.T) {
	chain := laneKernels{simd: Generic, stitchedMAC: true}
	beside := laneKernels{simd: Generic, masked: true, radix44: true, stitchedMAC: true, vectorLanes: 8}
	for _, c := range []struct {
		k      laneKernels
		groups int
		open   bool
		n, ad  int
		want   bool
	}{
		{laneKernels{simd: Generic}, 4, false, 1420, 0, false},
		{chain, 1, false, 1420, 0, false},
		{chain, 2, false, 256, 1024, true},
		{chain, 4, true, 64, 0, true},
		{beside, 1, false, 1420, 0, false},
		{beside, 4, false, vectorLanesMinLen, vectorLanesMaxAD, true},
		{beside, 2, false, 1420, 0, true},
		{beside, 4, false, vectorLanesMinLen - 1, 0, false},
		{beside, 4, false, 1420, vectorLanesMaxAD + 1, false},
		{beside, vectorLanesOpenGroups, true, vectorLanesMinLen, vectorLanesMaxAD, true},
		{beside, vectorLanesOpenGroups - 1, true, 1420, 0, false},
		{beside, 4, true, vectorLanesMinLen - 1, 0, false},
		{beside, 4, true, 1420, vectorLanesMaxAD + 1, false},
	} {
		if got := stitchedGroups(c.k, c.groups, c.open, c.n, c.ad); got != c.want {
			t.Errorf("vector lanes %d, %d groups of %d B with %d B of AD, open %v: pipelined %v, want %v",
				c.k.vectorLanes, c.groups, c.n, c.ad, c.open, got, c.want)
		}
	}
}

// newStreamLanes and newPolyLanes return lanes on tables of their own, as a chunk takes them from a
// laneMemory.
func newStreamLanes() *streamLanes {
	s := new(streamLanes)
	new(laneMemory).bind(s, new(polyLanes))
	return s
}

func newPolyLanes() *polyLanes {
	p := new(polyLanes)
	new(laneMemory).bind(new(streamLanes), p)
	return p
}
