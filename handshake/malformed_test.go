// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package handshake

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/wirebatch/wirebatch/protocol"
)

// remac recomputes the MAC1 of msg for receiver, so that a test can reach the checks behind it.
func remac(msg []byte, mac1Offset int, receiver PublicKey) []byte {
	key := mac1Key(&receiver)
	mac := macOf(key[:], msg[:mac1Offset])
	copy(msg[mac1Offset:], mac[:])
	return msg
}

func flip(msg []byte, at int) []byte {
	msg = bytes.Clone(msg)
	msg[at] ^= 0x80
	return msg
}

func TestMalformedMessages(t *testing.T) {
	tp := newTestPair(t, PresharedKey{})
	stranger := NewIdentity(mustGenerate(t), Limits{Now: tp.clock.Now})
	bOnStranger, err := stranger.AddPeer(tp.b.PublicKey(), PresharedKey{})
	if err != nil {
		t.Fatal(err)
	}
	strangerInit, err := stranger.CreateInitiation(bOnStranger)
	if err != nil {
		t.Fatal(err)
	}

	init, err := tp.a.CreateInitiation(tp.bOnA)
	if err != nil {
		t.Fatal(err)
	}
	res, err := tp.b.HandleMessage(bytes.Clone(init), tp.addrA)
	if err != nil {
		t.Fatal(err)
	}
	resp := res.Reply
	pubA, pubB := tp.a.PublicKey(), tp.b.PublicKey()

	lowOrderEphemeral := bytes.Clone(init)
	clear(lowOrderEphemeral[initEphemeral:initStatic])
	unknownReceiver := bytes.Clone(resp)
	binary.LittleEndian.PutUint32(unknownReceiver[respReceiver:], binary.LittleEndian.Uint32(resp[respReceiver:])+1)
	lowOrderResponse := bytes.Clone(resp)
	clear(lowOrderResponse[respEphemeral:respEmpty])
	cookieToNobody := make([]byte, protocol.CookieReplySize)
	cookieToNobody[0] = byte(protocol.TypeCookieReply)
	cookieGarbage := bytes.Clone(cookieToNobody)
	copy(cookieGarbage[cookieReceiver:], resp[respReceiver:respReceiver+4]) // a's pending index

	reservedSet := bytes.Clone(init)
	reservedSet[3] = 1
	transport := make([]byte, 32)
	transport[0] = byte(protocol.TypeTransport)

	cases := []struct {
		name string
		to   *Identity // b for messages to the responder, a for those to the initiator
		msg  []byte
		want error
	}{
		{"empty", tp.b, nil, ErrMessageSize},
		{"three bytes", tp.b, []byte{1, 0, 0}, ErrMessageSize},
		{"type 0", tp.b, make([]byte, protocol.InitiationSize), ErrMessageType},
		{"type 5", tp.b, append([]byte{5}, make([]byte, 63)...), ErrMessageType},
		{"transport data", tp.b, transport, ErrMessageType},
		{"reserved byte set", tp.b, reservedSet, ErrMessageType},
		{"initiation truncated", tp.b, init[:protocol.InitiationSize-1], ErrMessageSize},
		{"initiation too long", tp.b, append(bytes.Clone(init), 0), ErrMessageSize},
		{"response truncated", tp.a, resp[:protocol.ResponseSize-1], ErrMessageSize},
		{"cookie reply truncated", tp.a, cookieGarbage[:protocol.CookieReplySize-1], ErrMessageSize},
		{"initiation bad mac1", tp.b, flip(init, initMAC1), ErrMAC1},
		{"initiation tampered", tp.b, flip(init, initSender), ErrMAC1},
		{"response bad mac1", tp.a, flip(resp, respMAC1+15), ErrMAC1},
		{"initiation static does not decrypt", tp.b, remac(flip(init, initStatic+3), initMAC1, pubB), ErrDecrypt},
		{"initiation timestamp does not decrypt", tp.b, remac(flip(init, initTimestamp), initMAC1, pubB), ErrDecrypt},
		{"initiation ephemeral of low order", tp.b, remac(lowOrderEphemeral, initMAC1, pubB), ErrDecrypt},
		{"initiation from an unknown peer", tp.b, strangerInit, ErrUnknownPeer},
		{"initiation replayed", tp.b, init, ErrReplayedTimestamp},
		{"response to an unknown index", tp.a, remac(unknownReceiver, respMAC1, pubA), ErrUnknownIndex},
		{"response empty box does not decrypt", tp.a, remac(flip(resp, respEmpty), respMAC1, pubA), ErrDecrypt},
		{"response ephemeral of low order", tp.a, remac(lowOrderResponse, respMAC1, pubA), ErrDecrypt},
		{"response ephemeral tampered", tp.a, remac(flip(resp, respEphemeral), respMAC1, pubA), ErrDecrypt},
		{"cookie reply to an unknown index", tp.a, cookieToNobody, ErrUnknownIndex},
		{"cookie reply does not decrypt", tp.a, cookieGarbage, ErrDecrypt},
	}
	for _, c := range cases {
		res, err := c.to.HandleMessage(c.msg, tp.addrA)
		if !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
		if res.Keypair != nil || res.Reply != nil || res.Peer != nil {
			t.Errorf("%s: rejected but returned %+v", c.name, res)
		}
	}

	// After all that, the real response still completes the handshake, and only once.
	if _, err := tp.a.HandleMessage(resp, tp.addrB); err != nil {
		t.Fatalf("genuine response after the forgeries: %v", err)
	}
	if _, err := tp.a.HandleMessage(resp, tp.addrB); !errors.Is(err, ErrUnknownIndex) {
		t.Fatalf("response replayed: %v, want ErrUnknownIndex", err)
	}
}
