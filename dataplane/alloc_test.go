// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package dataplane

import (
	"testing"

	"github.com/wirebatch/wirebatch/kernels"
	"github.com/wirebatch/wirebatch/protocol"
)

// TestStagesAllocateNothing: a steady-state batch through both stages allocates nothing.
func TestStagesAllocateNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are not meaningful under the race detector")
	}
	a, b := newPair(t, kernels.ChaCha20Poly1305)
	roundTrip(t, a, b, [][]byte{ipPacket(addrA4, addrB4, 80, 0)})
	const n = 64
	pkts := make([][]byte, n)
	for i := range pkts {
		if i%2 == 0 {
			pkts[i] = ipPacket(addrA4, addrB4, 1420, byte(i))
		} else {
			pkts[i] = ipPacket(addrA6, addrB6, 64+i, byte(i))
		}
	}
	out, in := newPackets(n), newPackets(n)
	allocs := testing.AllocsPerRun(50, func() {
		for i, pk := range pkts {
			out.Sizes[i] = copy(out.Bufs[i][out.Offset:], pk)
		}
		a.enc.Encrypt(out)
		for i := range n {
			in.Sizes[i] = copy(in.Bufs[i][in.Offset:], out.Bufs[i][out.Offset-protocol.TransportHeaderSize:][:out.Sizes[i]])
			in.Addrs[i] = endA
		}
		b.dec.Decrypt(in)
		for i, v := range in.Verdicts {
			if v != VerdictOK {
				t.Fatalf("packet %d: %v", i, v)
			}
		}
	})
	// The stages promise nothing beyond what the kernels cost: measure a bare Seal and Open of the
	// same batch, so that an allocation the kernels make is reported as theirs.
	kernelAllocs := bareKernelAllocs(a.kp, n)
	if kernelAllocs != 0 {
		t.Logf("kernels.Seal+Open of %d packets allocates %v times per batch by itself", n, kernelAllocs)
	}
	if allocs != kernelAllocs {
		t.Fatalf("encrypt+decrypt of a %d-packet batch allocates %v times (the bare kernels: %v)", n, allocs, kernelAllocs)
	}
}

// bareKernelAllocs returns the allocations of one kernels.Seal and one kernels.Open of n 1420-byte
// packets under kp's keys.
func bareKernelAllocs(kp *Keypair, n int) float64 {
	ops := make([]kernels.Op, n)
	nonce := make([]byte, 12)
	bufs := make([][]byte, n)
	for i := range bufs {
		bufs[i] = make([]byte, 1420+kernels.TagSize)
	}
	return testing.AllocsPerRun(50, func() {
		for i := range ops {
			ops[i] = kernels.Op{Key: kp.send, Nonce: nonce, Src: bufs[i][:1420], Dst: bufs[i]}
		}
		kernels.Seal(ops)
		for i := range ops {
			ops[i] = kernels.Op{Key: kp.send, Nonce: nonce, Src: bufs[i], Dst: bufs[i][:1420]}
		}
		kernels.Open(ops)
	})
}
