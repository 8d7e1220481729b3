// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package handshake

import (
	"errors"
	"net/netip"
	"testing"

	"github.com/wirebatch/wirebatch/protocol"
)

// FuzzHandleMessage feeds arbitrary datagrams to a responder and to an initiator with a handshake
// pending, under load and not: HandleMessage must never panic, and whatever it rejects must yield
// neither keys nor a reply other than a cookie reply.
func FuzzHandleMessage(f *testing.F) {
	tp := newTestPair(f, PresharedKey{9})
	init, err := tp.a.CreateInitiation(tp.bOnA)
	if err != nil {
		f.Fatal(err)
	}
	res, err := tp.b.HandleMessage(init, tp.addrA)
	if err != nil {
		f.Fatal(err)
	}
	tp.b.SetUnderLoad(true)
	underLoad, _ := tp.b.HandleMessage(init, tp.addrA) // its Reply is a cookie reply
	tp.b.SetUnderLoad(false)
	f.Add(init, false)
	f.Add(res.Reply, false)
	f.Add(underLoad.Reply, true)
	f.Add([]byte{4, 0, 0, 0, 1, 2, 3, 4}, false)
	f.Add([]byte{}, true)

	src := netip.MustParseAddrPort("192.0.2.9:9")
	f.Fuzz(func(t *testing.T, msg []byte, load bool) {
		for _, d := range []*Identity{tp.a, tp.b} {
			d.SetUnderLoad(load)
			res, err := d.HandleMessage(msg, src)
			if err == nil {
				continue
			}
			if res.Keypair != nil {
				t.Fatalf("keypair returned with error %v", err)
			}
			if res.Reply != nil && (!errors.Is(err, ErrMAC2) || len(res.Reply) != protocol.CookieReplySize) {
				t.Fatalf("reply of %d bytes with error %v", len(res.Reply), err)
			}
		}
	})
}

// FuzzHandleMessageValidMAC1 lets the fuzzer past MAC1, which it cannot forge: the input is cut or
// padded to the length of its type and given a correct MAC1 for the receiving device, so the
// Diffie-Hellman, decryption, index and timestamp checks behind it see arbitrary bytes.
func FuzzHandleMessageValidMAC1(f *testing.F) {
	tp := newTestPair(f, PresharedKey{})
	init, err := tp.a.CreateInitiation(tp.bOnA)
	if err != nil {
		f.Fatal(err)
	}
	res, err := tp.b.HandleMessage(init, tp.addrA)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(init)
	f.Add(res.Reply)
	f.Add([]byte{2, 0, 0, 0})

	f.Fuzz(func(t *testing.T, msg []byte) {
		if len(msg) < 4 {
			return
		}
		to, size, mac1 := tp.b, protocol.InitiationSize, initMAC1
		if messageType(msg) == protocol.TypeResponse {
			to, size, mac1 = tp.a, protocol.ResponseSize, respMAC1
		}
		msg = append(msg, make([]byte, max(0, size-len(msg)))...)[:size]
		remac(msg, mac1, to.PublicKey())
		res, err := to.HandleMessage(msg, tp.addrA)
		if err != nil && (res.Keypair != nil || res.Reply != nil) {
			t.Fatalf("rejected (%v) but returned %+v", err, res)
		}
	})
}
