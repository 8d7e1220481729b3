// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package handshake

import (
	"bytes"
	"encoding/binary"
	"errors"
	"net/netip"
	"testing"
	"time"

	"golang.org/x/crypto/blake2s"

	"github.com/wirebatch/wirebatch/protocol"
)

func TestHandshakeDerivesMatchingKeys(t *testing.T) {
	for _, name := range []string{"no psk", "psk"} {
		t.Run(name, func(t *testing.T) {
			var psk PresharedKey
			if name == "psk" {
				psk = PresharedKey{1, 2, 3}
			}
			tp := newTestPair(t, psk)
			ki, kr := tp.handshake(t)
			if ki.Send != kr.Receive || ki.Receive != kr.Send {
				t.Fatal("initiator and responder keys do not pair up")
			}
			if ki.Send == ki.Receive {
				t.Fatal("send and receive keys are equal")
			}
			if !ki.Initiator || kr.Initiator {
				t.Fatalf("roles: initiator %v, responder %v", ki.Initiator, kr.Initiator)
			}
			if ki.LocalIndex != kr.RemoteIndex || ki.RemoteIndex != kr.LocalIndex {
				t.Fatalf("indices: initiator %#x/%#x, responder %#x/%#x", ki.LocalIndex, ki.RemoteIndex, kr.LocalIndex, kr.RemoteIndex)
			}
			if !ki.Created.Equal(tp.clock.Now()) || !kr.Created.Equal(tp.clock.Now()) {
				t.Fatal("creation time is not the clock's")
			}
			for _, c := range []struct {
				d   *Identity
				idx uint32
				p   *PeerState
			}{{tp.a, ki.LocalIndex, tp.bOnA}, {tp.b, kr.LocalIndex, tp.aOnB}} {
				p, kind, ok := c.d.Indices().Lookup(c.idx)
				if !ok || p != c.p || kind != IndexKeypair {
					t.Fatalf("index %#x: peer %p kind %d ok %v", c.idx, p, kind, ok)
				}
			}
			if tp.a.Indices().Len() != 1 || tp.b.Indices().Len() != 1 {
				t.Fatalf("indices in use: %d, %d; want 1 each", tp.a.Indices().Len(), tp.b.Indices().Len())
			}
			if got := tp.bOnA.LastHandshake(); !got.Equal(tp.clock.Now()) {
				t.Fatalf("initiator's last handshake %v", got)
			}
			ki.Wipe()
			if ki.Send != [KeySize]byte{} || ki.Receive != [KeySize]byte{} {
				t.Fatal("Wipe left key material")
			}
		})
	}
}

func TestPresharedKeyMismatchFailsResponse(t *testing.T) {
	tp := newTestPair(t, PresharedKey{1})
	tp.aOnB.SetPresharedKey(PresharedKey{2})
	init, err := tp.a.CreateInitiation(tp.bOnA)
	if err != nil {
		t.Fatal(err)
	}
	// The preshared key enters only at the response (psk2), so the responder cannot tell.
	res, err := tp.b.HandleMessage(init, tp.addrA)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tp.a.HandleMessage(res.Reply, tp.addrB); !errors.Is(err, ErrDecrypt) {
		t.Fatalf("response under another psk: %v, want ErrDecrypt", err)
	}
}

func TestMessageLayout(t *testing.T) {
	tp := newTestPair(t, PresharedKey{})
	init, err := tp.a.CreateInitiation(tp.bOnA)
	if err != nil {
		t.Fatal(err)
	}
	if len(init) != protocol.InitiationSize || !bytes.Equal(init[:4], []byte{1, 0, 0, 0}) {
		t.Fatalf("initiation: %d bytes, header % x", len(init), init[:4])
	}
	res, err := tp.b.HandleMessage(init, tp.addrA)
	if err != nil {
		t.Fatal(err)
	}
	resp := res.Reply
	if len(resp) != protocol.ResponseSize || !bytes.Equal(resp[:4], []byte{2, 0, 0, 0}) {
		t.Fatalf("response: %d bytes, header % x", len(resp), resp[:4])
	}
	if !bytes.Equal(resp[8:12], init[4:8]) {
		t.Fatal("response's receiver index is not the initiation's sender index")
	}
	if got := binary.LittleEndian.Uint32(resp[4:8]); got != res.Keypair.LocalIndex {
		t.Fatalf("response's sender index %#x, keypair's local index %#x", got, res.Keypair.LocalIndex)
	}
	// With no cookie held, MAC2 is all zero (paper section 5.4.4).
	if !bytes.Equal(init[132:148], make([]byte, 16)) || !bytes.Equal(resp[76:92], make([]byte, 16)) {
		t.Fatal("mac2 not zero without a cookie")
	}
}

// TestMAC1 recomputes each message's MAC1 from its definition: BLAKE2s-128 keyed with
// BLAKE2s-256("mac1----" || receiver's public key) over every byte before the MAC1 field.
func TestMAC1(t *testing.T) {
	tp := newTestPair(t, PresharedKey{})
	mac1 := func(receiver PublicKey, msg []byte) []byte {
		key := blake2s.Sum256(append([]byte("mac1----"), receiver[:]...))
		h, err := blake2s.New128(key[:])
		if err != nil {
			t.Fatal(err)
		}
		h.Write(msg)
		return h.Sum(nil)
	}
	init, err := tp.a.CreateInitiation(tp.bOnA)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(init[116:132], mac1(tp.b.PublicKey(), init[:116])) {
		t.Fatal("initiation mac1 is not MAC(HASH(label || S_r), msg[:116])")
	}
	res, err := tp.b.HandleMessage(init, tp.addrA)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(res.Reply[60:76], mac1(tp.a.PublicKey(), res.Reply[:60])) {
		t.Fatal("response mac1 is not MAC(HASH(label || S_i), msg[:60])")
	}
	for _, c := range []struct {
		name string
		msg  []byte
		to   *Identity
		bit  int
	}{
		{"initiation body", init, tp.b, 8 * 50},
		{"initiation mac1", init, tp.b, 8 * 120},
		{"response body", res.Reply, tp.a, 8 * 20},
		{"response mac1", res.Reply, tp.a, 8 * 70},
	} {
		bad := bytes.Clone(c.msg)
		bad[c.bit/8] ^= 1 << (c.bit % 8)
		if _, err := c.to.HandleMessage(bad, tp.addrA); !errors.Is(err, ErrMAC1) {
			t.Errorf("%s flipped: %v, want ErrMAC1", c.name, err)
		}
	}
	// A message to someone else carries a MAC1 we must not accept.
	if _, err := tp.a.HandleMessage(init, tp.addrB); !errors.Is(err, ErrMAC1) {
		t.Errorf("initiation to another key: %v, want ErrMAC1", err)
	}
}

func TestTAI64N(t *testing.T) {
	epoch := tai64n(time.Unix(0, 0))
	if want := []byte{0x40, 0, 0, 0, 0, 0, 0, 0x0a, 0, 0, 0, 0}; !bytes.Equal(epoch[:], want) {
		t.Fatalf("TAI64N(1970) = % x, want % x", epoch, want)
	}
	ts := tai64n(time.Unix(1, 0x12345678))
	if got := binary.BigEndian.Uint32(ts[8:]); got != 0x12000000 {
		t.Fatalf("nanoseconds %#x, want whitened to %#x", got, 0x12000000)
	}
	base := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	earlier, later := tai64n(base), tai64n(base.Add(20*time.Millisecond))
	if bytes.Compare(later[:], earlier[:]) <= 0 {
		t.Fatal("a later time does not compare greater")
	}
	sameWindow := tai64n(base.Add(time.Millisecond))
	if sameWindow != earlier {
		t.Fatal("times within one whitening window should label alike")
	}
}

func TestReplayedInitiationRejected(t *testing.T) {
	tp := newTestPair(t, PresharedKey{})
	first, err := tp.a.CreateInitiation(tp.bOnA)
	if err != nil {
		t.Fatal(err)
	}
	tp.clock.Advance(protocol.RekeyTimeout)
	second, err := tp.a.CreateInitiation(tp.bOnA)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tp.b.HandleMessage(second, tp.addrA); err != nil {
		t.Fatal(err)
	}
	for name, msg := range map[string][]byte{"same": second, "older": first} {
		if _, err := tp.b.HandleMessage(msg, tp.addrA); !errors.Is(err, ErrReplayedTimestamp) {
			t.Errorf("%s initiation again: %v, want ErrReplayedTimestamp", name, err)
		}
	}
	// An initiation made within the same whitened timestamp window is no newer either.
	tp.clock.Advance(protocol.RekeyTimeout)
	third, err := tp.a.CreateInitiation(tp.bOnA)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tp.b.HandleMessage(third, tp.addrA); err != nil {
		t.Fatalf("newer initiation: %v", err)
	}
}

func TestInitiationRateAndRetransmitReplacesPending(t *testing.T) {
	tp := newTestPair(t, PresharedKey{})
	first, err := tp.a.CreateInitiation(tp.bOnA)
	if err != nil {
		t.Fatal(err)
	}
	tp.clock.Advance(protocol.RekeyTimeout - time.Millisecond)
	if _, err := tp.a.CreateInitiation(tp.bOnA); !errors.Is(err, ErrInitiationTooSoon) {
		t.Fatalf("second initiation within REKEY_TIMEOUT: %v, want ErrInitiationTooSoon", err)
	}
	tp.clock.Advance(time.Millisecond)
	if _, err := tp.a.CreateInitiation(tp.bOnA); err != nil {
		t.Fatal(err)
	}
	if n := tp.a.Indices().Len(); n != 1 {
		t.Fatalf("%d indices in use after a retransmission, want 1 (the abandoned one freed)", n)
	}
	// The response to the abandoned initiation names a freed index.
	res, err := tp.b.HandleMessage(first, tp.addrA)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tp.a.HandleMessage(res.Reply, tp.addrB); !errors.Is(err, ErrUnknownIndex) {
		t.Fatalf("response to abandoned initiation: %v, want ErrUnknownIndex", err)
	}
}

func TestRoamingFollowsAuthenticatedPackets(t *testing.T) {
	tp := newTestPair(t, PresharedKey{})
	init, err := tp.a.CreateInitiation(tp.bOnA)
	if err != nil {
		t.Fatal(err)
	}
	roamedA := netip.MustParseAddrPort("198.51.100.7:4444")
	res, err := tp.b.HandleMessage(init, roamedA)
	if err != nil {
		t.Fatal(err)
	}
	if got := tp.aOnB.Endpoint(); got != roamedA {
		t.Fatalf("responder's endpoint for the initiator %v, want %v", got, roamedA)
	}
	roamedB := netip.MustParseAddrPort("[2001:db8::99]:5555")
	if _, err := tp.a.HandleMessage(res.Reply, roamedB); err != nil {
		t.Fatal(err)
	}
	if got := tp.bOnA.Endpoint(); got != roamedB {
		t.Fatalf("initiator's endpoint for the responder %v, want %v", got, roamedB)
	}
	// A forged message from elsewhere moves nothing.
	forged := bytes.Clone(init)
	forged[20] ^= 1
	tp.b.HandleMessage(forged, tp.addrB)
	if got := tp.aOnB.Endpoint(); got != roamedA {
		t.Fatalf("endpoint moved to %v by a forged initiation", got)
	}
	// The data plane reports the source of each authenticated transport message.
	third := netip.MustParseAddrPort("203.0.113.3:6666")
	tp.aOnB.PacketReceived(third, true)
	if got := tp.aOnB.Endpoint(); got != third {
		t.Fatalf("endpoint %v after an authenticated transport message from %v", got, third)
	}
}

func TestRemovePeerEndsItsHandshakes(t *testing.T) {
	tp := newTestPair(t, PresharedKey{})
	tp.handshake(t)
	tp.clock.Advance(protocol.RekeyTimeout)
	init, err := tp.a.CreateInitiation(tp.bOnA)
	if err != nil {
		t.Fatal(err)
	}
	tp.b.RemovePeer(tp.a.PublicKey())
	if n := tp.b.Indices().Len(); n != 0 {
		t.Fatalf("%d indices left after removing the only peer", n)
	}
	if _, err := tp.b.HandleMessage(init, tp.addrA); !errors.Is(err, ErrUnknownPeer) {
		t.Fatalf("initiation from a removed peer: %v, want ErrUnknownPeer", err)
	}
	if _, err := tp.b.CreateInitiation(tp.aOnB); !errors.Is(err, ErrUnknownPeer) {
		t.Fatalf("initiation to a removed peer: %v, want ErrUnknownPeer", err)
	}
}

// BenchmarkHandshake measures one complete handshake, both sides: what a peer costs a responder
// (with the initiator's work on top), for sizing the rate limiter and the under-load threshold.
func BenchmarkHandshake(b *testing.B) {
	tp := newTestPair(b, PresharedKey{})
	b.ReportAllocs()
	for b.Loop() {
		tp.clock.Advance(protocol.RekeyTimeout)
		init, err := tp.a.CreateInitiation(tp.bOnA)
		if err != nil {
			b.Fatal(err)
		}
		res, err := tp.b.HandleMessage(init, tp.addrA)
		if err != nil {
			b.Fatal(err)
		}
		res2, err := tp.a.HandleMessage(res.Reply, tp.addrB)
		if err != nil {
			b.Fatal(err)
		}
		// Retire both keypairs, as the data plane would, so the index tables stay small.
		tp.a.Indices().Release(res2.Keypair.LocalIndex)
		tp.b.Indices().Release(res.Keypair.LocalIndex)
	}
}

// TestConcurrentHandshakes runs handshakes of many initiators with one responder at once, and
// each initiator's timer events alongside, for the race detector.
func TestConcurrentHandshakes(t *testing.T) {
	const initiators = 8
	clock := newFakeClock()
	cfg := Limits{Now: clock.Now, NoJitter: true}
	responder := NewIdentity(mustGenerate(t), cfg)
	errs := make(chan error, initiators)
	for i := range initiators {
		d := NewIdentity(mustGenerate(t), cfg)
		p, err := d.AddPeer(responder.PublicKey(), PresharedKey{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := responder.AddPeer(d.PublicKey(), PresharedKey{byte(i)}); err != nil {
			t.Fatal(err)
		}
		p.SetPresharedKey(PresharedKey{byte(i)})
		src := netip.AddrPortFrom(netip.AddrFrom4([4]byte{192, 0, 2, byte(i)}), 1000)
		go func() {
			errs <- func() error {
				init, err := d.CreateInitiation(p)
				if err != nil {
					return err
				}
				ticked := make(chan struct{})
				go func() {
					p.Tick()
					p.NextDeadline()
					close(ticked)
				}()
				defer func() { <-ticked }()
				res, err := responder.HandleMessage(init, src)
				if err != nil {
					return err
				}
				res.Peer.PacketReceived(src, true)
				_, err = d.HandleMessage(res.Reply, netip.AddrPortFrom(netip.IPv6Loopback(), 1))
				p.PacketSent(true)
				return err
			}()
		}()
	}
	for range initiators {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	if n := responder.Indices().Len(); n != initiators {
		t.Fatalf("responder has %d indices in use, want %d", n, initiators)
	}
}

// TestInitiationFloodPerPeer: a responder accepts at most one initiation per peer every 20 ms
// (initiationRate), however fresh its timestamp: two initiations 18 ms apart, the second refused;
// 21 ms apart, accepted.
func TestInitiationFloodPerPeer(t *testing.T) {
	tp := newTestPair(t, PresharedKey{})
	first, err := tp.a.CreateInitiation(tp.bOnA)
	if err != nil {
		t.Fatal(err)
	}
	tp.clock.Advance(protocol.RekeyTimeout) // the initiator's own limit; the timestamp moves on
	second, err := tp.a.CreateInitiation(tp.bOnA)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tp.b.HandleMessage(first, tp.addrA); err != nil {
		t.Fatalf("first initiation: %v", err)
	}
	tp.clock.Advance(18 * time.Millisecond)
	if _, err := tp.b.HandleMessage(second, tp.addrA); !errors.Is(err, ErrInitiationFlood) {
		t.Fatalf("a fresh initiation 18 ms later: %v, want ErrInitiationFlood", err)
	}
	tp.clock.Advance(3 * time.Millisecond)
	if _, err := tp.b.HandleMessage(second, tp.addrA); err != nil {
		t.Fatalf("the same initiation 21 ms after the first: %v", err)
	}
}
