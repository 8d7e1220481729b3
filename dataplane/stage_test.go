// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package dataplane

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"encoding/binary"
	"math"
	"net/netip"
	"slices"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/chacha20poly1305"

	"github.com/wirebatch/wirebatch/kernels"
	"github.com/wirebatch/wirebatch/protocol"
)

// roundTrip seals pkts at a, opens them at b, and checks every verdict is OK and every packet arrives
// unchanged, padding stripped.
func roundTrip(t *testing.T, a, b *end, pkts [][]byte) {
	t.Helper()
	out := load(newPackets(len(pkts)), pkts)
	a.enc.Encrypt(out)
	for i, v := range out.Verdicts {
		if v != VerdictOK {
			t.Fatalf("encrypt packet %d (%d bytes): verdict %v", i, len(pkts[i]), v)
		}
		if want := protocol.TransportHeaderSize + paddedLen(len(pkts[i]), 1420) + kernels.TagSize; out.Sizes[i] != want {
			t.Fatalf("encrypt packet %d: message of %d bytes, want %d", i, out.Sizes[i], want)
		}
		if out.Peers[i] != a.peer || out.Addrs[i] != a.peer.Endpoint() {
			t.Fatalf("encrypt packet %d: peer %p addr %v, want %p %v", i, out.Peers[i], out.Addrs[i], a.peer, a.peer.Endpoint())
		}
	}
	in, _ := transfer(out, newPackets(len(pkts)), endA)
	b.dec.Decrypt(in)
	for i, v := range in.Verdicts {
		if v != VerdictOK {
			t.Fatalf("decrypt packet %d: verdict %v", i, v)
		}
		got := in.Bufs[i][in.Offset+protocol.TransportHeaderSize:][:in.Sizes[i]]
		if !bytes.Equal(got, pkts[i]) {
			t.Fatalf("decrypt packet %d: got %x, want %x", i, got, pkts[i])
		}
		if in.Peers[i] != b.peer {
			t.Fatalf("decrypt packet %d: peer %p, want %p", i, in.Peers[i], b.peer)
		}
	}
}

func TestRoundTrip(t *testing.T) {
	for _, suite := range []kernels.Suite{kernels.ChaCha20Poly1305, kernels.AES128GCM, kernels.AES256GCM} {
		t.Run(suite.String(), func(t *testing.T) {
			a, b := newPair(t, suite)
			var pkts [][]byte
			for i, n := range []int{20, 21, 35, 36, 40, 64, 100, 576, 1400, 1404, 1405, 1420, 41, 57, 1280, 1420} {
				src, dst := addrA4, addrB4
				if i%2 == 1 {
					src, dst = addrA6, addrB6
				}
				pkts = append(pkts, ipPacket(src, dst, n, byte(i)))
			}
			roundTrip(t, a, b, pkts)
			if ev := b.log.take(b.peer); ev&EventKeypairConfirmed == 0 || ev&EventDataReceived == 0 {
				t.Fatalf("B's events after A's first batch: %b, want confirmed and data received", ev)
			}
			if b.peer.Current() != b.kp || b.peer.Next() != nil {
				t.Fatal("B's keypair was not confirmed into current")
			}
			if ev := a.log.take(a.peer); ev != EventDataSent {
				t.Fatalf("A's events: %b, want data sent", ev)
			}
			// Now B can answer.
			var back [][]byte
			for i := range 130 { // more than batch.MaxPackets: two kernel calls
				back = append(back, ipPacket(addrB4, addrA4, 60+i, byte(i)))
			}
			roundTrip(t, b, a, back)
			st := a.peer.Stats()
			if st.TxPackets != uint64(len(pkts)) || st.RxPackets != 130 || st.Dropped() != 0 {
				t.Fatalf("A's peer stats %+v", st)
			}
			if ss := a.set.Stats(); ss.TxPackets != st.TxPackets || ss.RxBytes != st.RxBytes {
				t.Fatalf("A's set stats %+v differ from its only peer's %+v", ss, st)
			}
		})
	}
}

// TestMessageFormat checks a sealed message byte by byte against the WireGuard paper (section 5.4.6)
// using independent AEAD implementations as the oracle.
func TestMessageFormat(t *testing.T) {
	for _, suite := range []kernels.Suite{kernels.ChaCha20Poly1305, kernels.AES256GCM} {
		a, _ := newPair(t, suite)
		a.kp.sendCounter.Store(0x0102030405060708)
		pkt := ipPacket(addrA4, addrB4, 99, 7)
		out := load(newPackets(1), [][]byte{pkt})
		a.enc.Encrypt(out)
		msg := out.Bufs[0][out.Offset-protocol.TransportHeaderSize:][:out.Sizes[0]]
		wantHdr := []byte{4, 0, 0, 0, 2, 0, 0, 0, 8, 7, 6, 5, 4, 3, 2, 1}
		if !bytes.Equal(msg[:16], wantHdr) {
			t.Fatalf("%v header %x, want %x", suite, msg[:16], wantHdr)
		}
		var aead cipher.AEAD
		if suite == kernels.ChaCha20Poly1305 {
			aead, _ = chacha20poly1305.New(keyAB)
		} else {
			blk, _ := aes.NewCipher(keyAB)
			aead, _ = cipher.NewGCM(blk)
		}
		nonce := make([]byte, 12)
		binary.LittleEndian.PutUint64(nonce[4:], 0x0102030405060708)
		pt, err := aead.Open(nil, nonce, msg[16:], nil)
		if err != nil {
			t.Fatalf("%v: oracle cannot open the message: %v", suite, err)
		}
		want := append(append([]byte{}, pkt...), make([]byte, 112-99)...) // zero padding to 112
		if !bytes.Equal(pt, want) {
			t.Fatalf("%v: plaintext %x, want %x", suite, pt, want)
		}
	}
}

func TestPaddedLen(t *testing.T) {
	for _, c := range []struct{ size, mtu, want int }{
		{0, 1420, 0}, {1, 1420, 16}, {16, 1420, 16}, {17, 1420, 32}, {1410, 1420, 1420}, {1415, 1420, 1420},
		{1420, 1420, 1420}, {1421, 1420, 1421}, {1500, 1420, 1500}, {1417, 0, 1424}, {30, 20, 30},
	} {
		if got := paddedLen(c.size, c.mtu); got != c.want {
			t.Errorf("paddedLen(%d, %d) = %d, want %d", c.size, c.mtu, got, c.want)
		}
	}
}

// sealRaw builds a transport message from kp's send key for an arbitrary plaintext, bypassing the
// encrypt stage's checks, to feed the decrypt stage inner packets the encrypt stage would refuse.
func sealRaw(kp *Keypair, counter uint64, pt []byte) []byte {
	msg := make([]byte, protocol.TransportHeaderSize+len(pt)+kernels.TagSize)
	putHeader(msg, kp.remoteIndex, counter)
	var nonce [12]byte
	putNonce(&nonce, counter)
	copy(msg[protocol.TransportHeaderSize:], pt)
	kernels.Seal([]kernels.Op{{Key: kp.send, Nonce: nonce[:], Src: msg[protocol.TransportHeaderSize : protocol.TransportHeaderSize+len(pt)], Dst: msg[protocol.TransportHeaderSize:]}})
	return msg
}

// decryptOne runs one datagram through e's decrypt stage and returns its verdict and size.
func decryptOne(e *end, msg []byte, src netip.AddrPort) (Verdict, int) {
	in := newPackets(1)
	in.Sizes[0] = copy(in.Bufs[0][in.Offset:], msg)
	in.Addrs[0] = src
	e.dec.Decrypt(in)
	return in.Verdicts[0], in.Sizes[0]
}

// encryptOne runs one packet through e's encrypt stage and returns the batch.
func encryptOne(e *end, pkt []byte, keepaliveFor *Peer) Packets {
	out := newPackets(1)
	out.Sizes[0] = copy(out.Bufs[0][out.Offset:], pkt)
	out.Peers[0] = keepaliveFor
	e.enc.Encrypt(out)
	return out
}

func TestEncryptVerdicts(t *testing.T) {
	a, b := newPair(t, kernels.ChaCha20Poly1305)
	ok := ipPacket(addrA4, addrB4, 100, 1)

	if v := encryptOne(a, ipPacket(addrA4, netip.MustParseAddr("10.9.9.9"), 100, 1), nil).Verdicts[0]; v != VerdictNoRoute {
		t.Errorf("unrouted destination: %v", v)
	}
	if v := encryptOne(b, ipPacket(addrB6, addrA6, 100, 1), nil).Verdicts[0]; v != VerdictNoKey {
		t.Errorf("responder before confirmation: %v", v)
	}
	if ev := b.log.take(b.peer); ev&EventNoKeypair == 0 {
		t.Errorf("no EventNoKeypair for a packet without a keypair: %b", ev)
	}
	for name, pkt := range map[string][]byte{
		"version 5": append([]byte{0x50}, ok[1:]...), "short IPv4": ok[:19], "short IPv6": ipPacket(addrA6, addrB6, 40, 0)[:39],
	} {
		if v := encryptOne(a, pkt, nil).Verdicts[0]; v != VerdictMalformed {
			t.Errorf("%s: %v", name, v)
		}
	}
	if v := encryptOne(a, nil, nil).Verdicts[0]; v != VerdictMalformed {
		t.Errorf("keepalive without a peer: %v", v)
	}
	// No headroom, no tailroom, size beyond the buffer.
	p := load(newPackets(3), [][]byte{ok, ok, ok})
	p.Offset = protocol.TransportHeaderSize - 1
	a.enc.Encrypt(p)
	if p.Verdicts[0] != VerdictMalformed {
		t.Errorf("no headroom: %v", p.Verdicts[0])
	}
	p = load(newPackets(4), [][]byte{ok, ok, ok, ok})
	p.Bufs[0] = p.Bufs[0][:p.Offset+100+kernels.TagSize] // room for the packet and tag but not the padding
	p.Sizes[1] = testBufSize
	p.Sizes[2] = -1
	p.Sizes[3] = math.MaxInt
	a.enc.Encrypt(p)
	for i, v := range p.Verdicts {
		if v != VerdictMalformed {
			t.Errorf("bad room, packet %d: %v", i, v)
		}
	}

	// No endpoint.
	c := a.set.AddPeer(PeerConfig{AllowedIPs: []netip.Prefix{netip.MustParsePrefix("10.7.0.0/16")}})
	if v := encryptOne(a, ipPacket(addrA4, netip.MustParseAddr("10.7.0.1"), 60, 0), nil).Verdicts[0]; v != VerdictNoRoute {
		t.Errorf("peer without endpoint: %v", v)
	}
	if st := c.Stats(); st.Drops[VerdictNoRoute] != 1 {
		t.Errorf("peer without endpoint: drops %v", st.Drops)
	}

	// Keepalive: an empty payload padded to nothing.
	out := encryptOne(a, nil, a.peer)
	if out.Verdicts[0] != VerdictOK || out.Sizes[0] != Overhead {
		t.Errorf("keepalive: verdict %v size %d", out.Verdicts[0], out.Sizes[0])
	}
	if ev := a.log.take(a.peer); ev != EventKeepaliveSent {
		t.Errorf("keepalive events %b", ev)
	}

	// Limits: the last counter may be used, the one after it may not.
	a.kp.sendCounter.Store(protocol.RejectAfterMessages - 1)
	if v := encryptOne(a, ok, nil).Verdicts[0]; v != VerdictOK {
		t.Errorf("last counter: %v", v)
	}
	if v := encryptOne(a, ok, nil).Verdicts[0]; v != VerdictKeyExpired {
		t.Errorf("counter at protocol.RejectAfterMessages: %v", v)
	}
	a.kp.sendCounter.Store(protocol.RejectAfterMessages - 1)
	p = load(newPackets(2), [][]byte{ok, ok})
	a.enc.Encrypt(p)
	if p.Verdicts[0] != VerdictKeyExpired || p.Verdicts[1] != VerdictKeyExpired {
		t.Errorf("batch crossing protocol.RejectAfterMessages: %v", p.Verdicts)
	}
	if ev := a.log.take(a.peer); ev&EventRekeyNeeded == 0 {
		t.Errorf("no rekey request at the message limit: %b", ev)
	}
	a.kp.sendCounter.Store(protocol.RekeyAfterMessages)
	if v := encryptOne(a, ok, nil).Verdicts[0]; v != VerdictOK {
		t.Errorf("past protocol.RekeyAfterMessages: %v", v)
	}
	if ev := a.log.take(a.peer); ev != EventDataSent|EventRekeyNeeded {
		t.Errorf("past protocol.RekeyAfterMessages: events %b", ev)
	}

	// Age: rekey after protocol.RekeyAfterTime (initiator only), reject after protocol.RejectAfterTime.
	for _, c := range []struct {
		age       int // seconds
		initiator bool
		verdict   Verdict
		events    Event
	}{
		{119, true, VerdictOK, EventDataSent},
		{121, true, VerdictOK, EventDataSent | EventRekeyNeeded},
		{121, false, VerdictNoKey, EventNoKeypair}, // responder: next until confirmed
		{181, true, VerdictKeyExpired, EventNoKeypair | EventRekeyNeeded},
	} {
		a, _ := newPair(t, kernels.ChaCha20Poly1305)
		a.peer.ExpireKeypairs()
		_, err := a.set.InstallKeypair(a.peer, KeypairConfig{Suite: kernels.ChaCha20Poly1305, SendKey: keyAB, ReceiveKey: keyBA,
			LocalIndex: 9, RemoteIndex: 2, Initiator: c.initiator, Created: agedBy(secs(c.age))})
		if err != nil {
			t.Fatal(err)
		}
		if v := encryptOne(a, ok, nil).Verdicts[0]; v != c.verdict {
			t.Errorf("age %ds initiator %v: verdict %v, want %v", c.age, c.initiator, v, c.verdict)
		}
		if ev := a.log.take(a.peer); ev != c.events {
			t.Errorf("age %ds initiator %v: events %b, want %b", c.age, c.initiator, ev, c.events)
		}
	}
}

func TestDecryptVerdicts(t *testing.T) {
	a, b := newPair(t, kernels.ChaCha20Poly1305)
	good := func(n int) []byte {
		out := encryptOne(a, ipPacket(addrA4, addrB4, n, byte(n)), nil)
		return append([]byte{}, out.Bufs[0][out.Offset-protocol.TransportHeaderSize:][:out.Sizes[0]]...)
	}
	m1 := good(100)
	if v, n := decryptOne(b, m1, endA); v != VerdictOK || n != 100 {
		t.Fatalf("good message: %v, %d bytes", v, n)
	}
	if v, _ := decryptOne(b, m1, endA); v != VerdictReplay {
		t.Errorf("replayed message: %v", v)
	}
	// Duplicates inside one batch: the first wins.
	m2 := good(200)
	in := newPackets(3)
	for i := range 3 {
		in.Sizes[i] = copy(in.Bufs[i][in.Offset:], m2)
		in.Addrs[i] = endA
	}
	b.dec.Decrypt(in)
	if in.Verdicts[0] != VerdictOK || in.Verdicts[1] != VerdictReplay || in.Verdicts[2] != VerdictReplay {
		t.Errorf("duplicates in a batch: %v", in.Verdicts)
	}

	forged := good(100)
	forged[protocol.TransportHeaderSize+5] ^= 1
	if v, _ := decryptOne(b, forged, endA); v != VerdictAuthFailed {
		t.Errorf("forged message: %v", v)
	}
	forged = good(100)
	forged[protocol.TransportCounterOffset] ^= 1 // a different counter gives a different nonce
	if v, _ := decryptOne(b, forged, endA); v != VerdictAuthFailed {
		t.Errorf("message with a changed counter: %v", v)
	}
	unknown := good(100)
	unknown[protocol.TransportReceiverOffset] = 99
	if v, _ := decryptOne(b, unknown, endA); v != VerdictNoKey {
		t.Errorf("unknown receiver index: %v", v)
	}
	limit := sealRaw(a.kp, protocol.RejectAfterMessages, ipPacket(addrA4, addrB4, 60, 0))
	if v, _ := decryptOne(b, limit, endA); v != VerdictKeyExpired {
		t.Errorf("counter at protocol.RejectAfterMessages: %v", v)
	}

	ctr := uint64(1000)
	raw := func(pt []byte) []byte { ctr++; return sealRaw(a.kp, ctr, pt) }
	ok4 := ipPacket(addrA4, addrB4, 60, 0)
	for name, c := range map[string]struct {
		msg []byte
		v   Verdict
	}{
		"keepalive":            {raw(nil), VerdictOK},
		"bad source v4":        {raw(ipPacket(netip.MustParseAddr("10.0.0.3"), addrB4, 60, 0)), VerdictBadSource},
		"bad source v6":        {raw(ipPacket(netip.MustParseAddr("fd00::3"), addrB6, 60, 0)), VerdictBadSource},
		"inner version 5":      {raw(append([]byte{0x55}, ok4[1:]...)), VerdictMalformed},
		"inner short v4":       {raw(ok4[:19]), VerdictMalformed},
		"inner short v6":       {raw(ipPacket(addrA6, addrB6, 40, 0)[:39]), VerdictMalformed},
		"inner length too big": {raw(ok4[:59]), VerdictMalformed},
		"inner length < 20":    {raw(append([]byte{0x45, 0, 0, 19}, ok4[4:]...)), VerdictMalformed},
		"too short":            {m1[:Overhead-1], VerdictMalformed},
		"handshake type":       {append([]byte{1}, m1[1:]...), VerdictMalformed},
		"reserved bits":        {append([]byte{4, 0, 1}, m1[3:]...), VerdictMalformed},
		"empty":                {nil, VerdictMalformed},
	} {
		if v, _ := decryptOne(b, c.msg, endA); v != c.v {
			t.Errorf("%s: verdict %v, want %v", name, v, c.v)
		}
	}
	// Inner packet with padding after a v6 header: the size is the header's.
	if v, n := decryptOne(b, raw(append(ipPacket(addrA6, addrB6, 41, 0), 0, 0, 0, 0, 0, 0, 0)), endA); v != VerdictOK || n != 41 {
		t.Errorf("padded v6: %v %d", v, n)
	}
	st := b.peer.Stats()
	if st.Drops[VerdictReplay] != 3 || st.Drops[VerdictAuthFailed] != 2 || st.Drops[VerdictBadSource] != 2 || st.Drops[VerdictMalformed] != 5 {
		t.Errorf("B's peer drops %v", st.Drops)
	}
	// Unattributable drops are counted only set-wide.
	if ss := b.set.Stats(); ss.Drops[VerdictNoKey] != 1 || ss.Drops[VerdictMalformed] != 9 {
		t.Errorf("B's set drops %v", ss.Drops)
	}

	// Bad sizes and offsets.
	in = newPackets(4)
	in.Sizes[0] = -5
	in.Sizes[1] = testBufSize
	in.Sizes[2] = 1 << 40
	in.Sizes[3] = 64
	in.Offset = testBufSize
	b.dec.Decrypt(in)
	for i, v := range in.Verdicts {
		if v != VerdictMalformed {
			t.Errorf("bad size %d: %v", i, v)
		}
	}

	// Expired receive keypair.
	b.peer.ExpireKeypairs()
	if _, err := b.set.InstallKeypair(b.peer, KeypairConfig{Suite: kernels.ChaCha20Poly1305, SendKey: keyBA, ReceiveKey: keyAB,
		LocalIndex: 2, RemoteIndex: 1, Initiator: true, Created: agedBy(protocol.RejectAfterTime + secs(1))}); err != nil {
		t.Fatal(err)
	}
	if v, _ := decryptOne(b, good(100), endA); v != VerdictKeyExpired {
		t.Errorf("expired keypair: %v", v)
	}
}

func TestRoamingAndRekeyOnReceive(t *testing.T) {
	a, b := newPair(t, kernels.ChaCha20Poly1305)
	roundTrip(t, a, b, [][]byte{ipPacket(addrA4, addrB4, 80, 0)})
	b.log.take(b.peer)
	out := encryptOne(a, ipPacket(addrA4, addrB4, 80, 0), nil)
	moved := netip.MustParseAddrPort("[2001:db8::7]:4000")
	if v, _ := decryptOne(b, out.Bufs[0][out.Offset-protocol.TransportHeaderSize:][:out.Sizes[0]], moved); v != VerdictOK {
		t.Fatalf("verdict %v", v)
	}
	if b.peer.Endpoint() != moved {
		t.Errorf("endpoint %v after roaming, want %v", b.peer.Endpoint(), moved)
	}
	if ev := b.log.take(b.peer); ev != EventDataReceived|EventEndpointChanged {
		t.Errorf("roaming events %b", ev)
	}
	// A forged message from elsewhere does not move the endpoint.
	msg := append([]byte{}, out.Bufs[0][out.Offset-protocol.TransportHeaderSize:][:out.Sizes[0]]...)
	msg[20] ^= 1
	if v, _ := decryptOne(b, msg, endA); v != VerdictAuthFailed || b.peer.Endpoint() != moved {
		t.Errorf("forged message: verdict %v, endpoint %v", v, b.peer.Endpoint())
	}

	// An initiator receiving on a keypair near protocol.RejectAfterTime asks for a rekey.
	a.peer.ExpireKeypairs()
	if _, err := a.set.InstallKeypair(a.peer, KeypairConfig{Suite: kernels.ChaCha20Poly1305, SendKey: keyAB, ReceiveKey: keyBA,
		LocalIndex: 1, RemoteIndex: 2, Initiator: true, Created: agedBy(rekeyOnReceiveAge + secs(1))}); err != nil {
		t.Fatal(err)
	}
	back := encryptOne(b, ipPacket(addrB4, addrA4, 80, 0), nil)
	if v, _ := decryptOne(a, back.Bufs[0][back.Offset-protocol.TransportHeaderSize:][:back.Sizes[0]], endB); v != VerdictOK {
		t.Fatalf("verdict %v", v)
	}
	if ev := a.log.take(a.peer); ev&EventRekeyNeeded == 0 {
		t.Errorf("no rekey request from an old initiator keypair on receive: %b", ev)
	}
}

// TestKeypairRotation follows keypairs through the slots and checks that retired ones are wiped only
// once no batch holds them.
func TestKeypairRotation(t *testing.T) {
	log := &eventLog{}
	s := NewPeerSet(log)
	p := s.AddPeer(PeerConfig{Endpoint: endB})
	install := func(idx uint32, initiator bool) *Keypair {
		kp, err := s.InstallKeypair(p, KeypairConfig{Suite: kernels.ChaCha20Poly1305, SendKey: keyAB, ReceiveKey: keyBA, LocalIndex: idx, Initiator: initiator})
		if err != nil {
			t.Fatal(err)
		}
		return kp
	}
	slots := func() [3]*Keypair { return [3]*Keypair{p.Current(), p.Previous(), p.Next()} }
	k1 := install(1, true)
	k2 := install(2, true)
	if slots() != [3]*Keypair{k2, k1, nil} {
		t.Fatalf("after two initiations: %v", slots())
	}
	k3 := install(3, false)
	if slots() != [3]*Keypair{k2, nil, k3} || !k1.Destroyed() {
		t.Fatalf("after a response: %v, k1 destroyed %v", slots(), k1.Destroyed())
	}
	if s.index.lookup(1) != nil || s.index.lookup(3) != k3 {
		t.Fatal("index table not updated")
	}
	if !p.confirm(k3) || slots() != [3]*Keypair{k3, k2, nil} {
		t.Fatalf("after confirmation: %v", slots())
	}
	if _, err := s.InstallKeypair(p, KeypairConfig{Suite: kernels.ChaCha20Poly1305, SendKey: keyAB, ReceiveKey: keyBA, LocalIndex: 3}); err == nil {
		t.Fatal("a duplicate local index was accepted")
	}
	// A batch holding k2 delays its destruction past retirement.
	if !k2.tryAcquire() {
		t.Fatal("tryAcquire of an installed keypair failed")
	}
	k4 := install(4, false)
	k5 := install(5, true) // next (k4) becomes previous, current (k3) is retired with the old previous (k2)
	if slots() != [3]*Keypair{k5, k4, nil} || !k3.Destroyed() {
		t.Fatalf("after an initiation over a pending response: %v", slots())
	}
	if k2.Destroyed() {
		t.Fatal("k2 destroyed while a batch holds it")
	}
	k2.release()
	if !k2.Destroyed() || k2.tryAcquire() {
		t.Fatal("k2 not destroyed after its last release, or acquirable after it")
	}
	s.RemovePeer(p)
	if !k4.Destroyed() || !k5.Destroyed() || p.Current() != nil || s.index.lookup(5) != nil {
		t.Fatal("RemovePeer left keypairs behind")
	}
	if !slices.Equal(log.retired, []uint32{1, 2, 3, 5, 4}) {
		t.Fatalf("retired local indices %v, want [1 2 3 5 4]", log.retired)
	}
	if _, err := s.InstallKeypair(p, KeypairConfig{Suite: kernels.ChaCha20Poly1305, SendKey: keyAB, ReceiveKey: keyBA, LocalIndex: 6}); err != ErrPeerRemoved {
		t.Fatalf("install on a removed peer: %v", err)
	}
	if _, err := s.InstallKeypair(s.AddPeer(PeerConfig{}), KeypairConfig{Suite: kernels.XChaCha20Poly1305, SendKey: keyAB, ReceiveKey: keyBA}); err == nil {
		t.Fatal("a suite with a 24-byte nonce was accepted")
	}
}

// TestConcurrentStages runs encrypt and decrypt workers on one session while the control plane keeps
// installing new sessions on both sides (so keypairs are confirmed, retired and wiped under the
// workers): a stage using a wiped key would panic in kernels, a lost replay update would accept a
// duplicate.
func TestConcurrentStages(t *testing.T) {
	a, b := newPair(t, kernels.ChaCha20Poly1305)
	roundTrip(t, a, b, [][]byte{ipPacket(addrA4, addrB4, 80, 0)}) // confirm B's keypair
	const workers, batches = 3, 60
	msgs := make(chan [][]byte, workers*batches)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			enc := NewEncrypter(a.set, 1420)
			for i := range batches {
				pkts := make([][]byte, 16)
				for j := range pkts {
					pkts[j] = ipPacket(addrA4, addrB4, 60+j, byte(w+i))
				}
				out := load(newPackets(16), pkts)
				enc.Encrypt(out)
				var sealed [][]byte
				for j, v := range out.Verdicts {
					if v != VerdictOK {
						t.Errorf("encrypt: %v", v)
						continue
					}
					sealed = append(sealed, append([]byte{}, out.Bufs[j][out.Offset-protocol.TransportHeaderSize:][:out.Sizes[j]]...))
				}
				msgs <- sealed
			}
		}()
	}
	// The new sessions start once batches messages are accepted: they then retire the first
	// sessions under traffic, and a scheduler that runs the decrypters late cannot leave every
	// message on a session already retired.
	enough := make(chan struct{})
	wg.Add(1)
	go func() { // new sessions: B responds (next), A initiates (current at once)
		defer wg.Done()
		select {
		case <-enough:
		case <-time.After(time.Minute):
			t.Error("fewer messages accepted than batches before the new sessions")
			return
		}
		for i := range 30 {
			send, recv := bytesOf(byte(3*i), 32), bytesOf(byte(3*i+1), 32)
			idxA, idxB := uint32(1000+i), uint32(2000+i)
			if _, err := b.set.InstallKeypair(b.peer, KeypairConfig{Suite: kernels.ChaCha20Poly1305, SendKey: recv, ReceiveKey: send,
				LocalIndex: idxB, RemoteIndex: idxA}); err != nil {
				t.Error(err)
				return
			}
			if _, err := a.set.InstallKeypair(a.peer, KeypairConfig{Suite: kernels.ChaCha20Poly1305, SendKey: send, ReceiveKey: recv,
				LocalIndex: idxA, RemoteIndex: idxB, Initiator: true}); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	go func() { wg.Wait(); close(msgs) }()

	type id struct {
		index   uint32
		counter uint64
	}
	var mu sync.Mutex
	accepted := map[id]bool{}
	var dwg sync.WaitGroup
	for range workers {
		dwg.Add(1)
		go func() {
			defer dwg.Done()
			dec := NewDecrypter(b.set)
			for sealed := range msgs {
				for pass := range 2 { // every batch twice: the second pass must accept nothing
					in := newPackets(len(sealed))
					for j, m := range sealed {
						in.Sizes[j] = copy(in.Bufs[j][in.Offset:], m)
					}
					dec.Decrypt(in)
					for j, v := range in.Verdicts {
						k := id{headerReceiver(sealed[j]), headerCounter(sealed[j])}
						switch {
						case v == VerdictOK && pass == 0:
							mu.Lock()
							if accepted[k] {
								t.Errorf("message %v accepted twice", k)
							}
							accepted[k] = true
							if len(accepted) == batches {
								close(enough)
							}
							mu.Unlock()
						case v == VerdictReplay, v == VerdictNoKey: // seen, or its session retired meanwhile
						default:
							t.Errorf("pass %d: verdict %v", pass, v)
						}
					}
				}
			}
		}()
	}
	dwg.Wait()
}

// TestRoamingFollowsNewestCounter: the endpoint follows the source of the newest authenticated
// counter, not the last message checked: a batch of older messages from the previous address,
// checked after a newer one (as a slower decrypt worker would), does not move the peer back.
func TestRoamingFollowsNewestCounter(t *testing.T) {
	a, b := newPair(t, kernels.ChaCha20Poly1305)
	roundTrip(t, a, b, [][]byte{ipPacket(addrA4, addrB4, 80, 0)})
	older := encryptOne(a, ipPacket(addrA4, addrB4, 80, 1), nil)
	newer := encryptOne(a, ipPacket(addrA4, addrB4, 80, 2), nil)
	wire := func(p Packets) []byte { return p.Bufs[0][p.Offset-protocol.TransportHeaderSize:][:p.Sizes[0]] }
	prev := netip.MustParseAddrPort("192.0.2.50:4000")
	now := netip.MustParseAddrPort("198.51.100.60:5000")
	if v, _ := decryptOne(b, wire(newer), now); v != VerdictOK {
		t.Fatalf("newer message: %v", v)
	}
	if v, _ := decryptOne(b, wire(older), prev); v != VerdictOK {
		t.Fatalf("older message: %v (it is inside the replay window)", v)
	}
	if ep := b.peer.Endpoint(); ep != now {
		t.Errorf("endpoint %v after an older message from the previous address, want %v", ep, now)
	}
}
