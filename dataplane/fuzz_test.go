// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package dataplane

import (
	"bytes"
	"testing"

	"github.com/wirebatch/wirebatch/kernels"
	"github.com/wirebatch/wirebatch/protocol"
)

// FuzzDecrypt feeds the decrypt stage arbitrary datagrams, seeded with real messages (data, keepalive,
// IPv6) of a fixed session. Invariants: no panic; every verdict is valid; a datagram is accepted only
// if it is byte for byte a message the session sealed (forgery is impossible), and then its packet is
// the one sealed; the well-formed message sent alongside in the same batch is always accepted.
func FuzzDecrypt(f *testing.F) {
	a, _ := newPair(f, kernels.ChaCha20Poly1305)
	sealed := map[string][]byte{}
	seal := func(pkt []byte, keepalive bool) []byte {
		var peer *Peer
		if keepalive {
			peer = a.peer
		}
		out := encryptOne(a, pkt, peer)
		msg := append([]byte{}, out.Bufs[0][out.Offset-protocol.TransportHeaderSize:][:out.Sizes[0]]...)
		sealed[string(msg)] = pkt
		return msg
	}
	f.Add(seal(ipPacket(addrA4, addrB4, 100, 1), false))
	f.Add(seal(nil, true))
	f.Add(seal(ipPacket(addrA6, addrB6, 1420, 2), false))
	f.Add(seal(ipPacket(addrA4, addrB4, 21, 3), false)[:40])
	f.Add([]byte{4, 0, 0, 0, 2, 0, 0, 0})
	f.Add([]byte{1})
	reference := seal(ipPacket(addrA4, addrB4, 300, 9), false)
	f.Fuzz(func(t *testing.T, data []byte) {
		_, b := newPair(t, kernels.ChaCha20Poly1305) // a fresh window every time
		in := newPackets(2)
		if len(data) > testBufSize-in.Offset {
			data = data[:testBufSize-in.Offset]
		}
		in.Sizes[0] = copy(in.Bufs[0][in.Offset:], data)
		in.Sizes[1] = copy(in.Bufs[1][in.Offset:], reference)
		if bytes.Equal(data, reference) {
			in.Sizes[1] = 0 // not a duplicate of itself
		}
		b.dec.Decrypt(in)
		v := in.Verdicts[0]
		if v >= NumVerdicts {
			t.Fatalf("verdict %d", v)
		}
		if v == VerdictOK {
			pkt, ok := sealed[string(data)]
			if !ok {
				t.Fatalf("accepted a datagram nobody sealed: %x", data)
			}
			if got := in.Bufs[0][in.Offset+protocol.TransportHeaderSize:][:in.Sizes[0]]; !bytes.Equal(got, pkt) {
				t.Fatalf("accepted %x as %x, sealed %x", data, got, pkt)
			}
		}
		if in.Sizes[1] != 0 && in.Verdicts[1] != VerdictOK {
			t.Fatalf("the reference message got %v next to %x", in.Verdicts[1], data)
		}
	})
}
