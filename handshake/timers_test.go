// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package handshake

import (
	"testing"
	"time"

	"github.com/wirebatch/wirebatch/protocol"
)

// The timer tests drive the state machine of paper section 6 with the fake clock: each checks the
// deadline a peer reports and what Tick returns just before and at it.

// expectTick checks that nothing fires at deadline-1ns and that want fires at deadline.
func expectTick(t *testing.T, tp *testPair, p *PeerState, deadline time.Time, want Action) {
	t.Helper()
	next, ok := p.NextDeadline()
	if !ok || !next.Equal(deadline) {
		t.Fatalf("next deadline %v (armed %v), want %v", next, ok, deadline)
	}
	tp.clock.Advance(deadline.Sub(tp.clock.Now()) - time.Nanosecond)
	if a := p.Tick(); a != 0 {
		t.Fatalf("Tick 1 ns early = %b", a)
	}
	tp.clock.Advance(time.Nanosecond)
	if a := p.Tick(); a != want {
		t.Fatalf("Tick at the deadline = %b, want %b", a, want)
	}
}

func TestTimerRetransmitUntilRekeyAttemptTime(t *testing.T) {
	// Shortened limits, as a test of configurability: retransmit every 100 ms, give up after 1 s.
	cfg := Limits{RekeyTimeout: 100 * time.Millisecond, RekeyAttemptTime: time.Second, RejectAfterTime: time.Minute, NoJitter: true}
	tp := newTestPairWith(t, PresharedKey{}, cfg)
	p := tp.bOnA
	start := tp.clock.Now()
	sent := 0
	for {
		if _, err := tp.a.CreateInitiation(p); err != nil {
			t.Fatalf("initiation %d: %v", sent, err)
		}
		sent++
		deadline := tp.clock.Now().Add(cfg.RekeyTimeout)
		if deadline.Sub(start) >= cfg.RekeyAttemptTime {
			expectTick(t, tp, p, deadline, ActionGiveUp)
			break
		}
		expectTick(t, tp, p, deadline, ActionSendInitiation)
	}
	if sent != 10 {
		t.Fatalf("%d initiations before giving up, want 10 (1 s / 100 ms)", sent)
	}
	// Giving up arms the erasure of keys at 3 × REJECT_AFTER_TIME; nothing else is pending.
	expectTick(t, tp, p, tp.clock.Now().Add(3*cfg.RejectAfterTime), ActionZeroKeys)
	if _, ok := p.NextDeadline(); ok {
		t.Fatal("a timer is still armed after giving up and zeroing")
	}
	// New data to send starts a fresh series with its own REKEY_ATTEMPT_TIME.
	if _, err := tp.a.CreateInitiation(p); err != nil {
		t.Fatal(err)
	}
	expectTick(t, tp, p, tp.clock.Now().Add(cfg.RekeyTimeout), ActionSendInitiation)
}

func TestTimerJitterBoundsRetransmission(t *testing.T) {
	tp := newTestPairWith(t, PresharedKey{}, Limits{}) // default jitter, up to 1/3 s
	for range 20 {
		tp.clock.Advance(protocol.RekeyTimeout)
		if _, err := tp.a.CreateInitiation(tp.bOnA); err != nil {
			t.Fatal(err)
		}
		next, _ := tp.bOnA.NextDeadline()
		if d := next.Sub(tp.clock.Now()); d < protocol.RekeyTimeout || d >= protocol.RekeyTimeout+DefaultRekeyTimeoutJitter {
			t.Fatalf("retransmission after %v, want REKEY_TIMEOUT + [0, 1/3 s)", d)
		}
	}
}

func TestTimerHandshakeCompleteStopsRetransmission(t *testing.T) {
	tp := newTestPair(t, PresharedKey{})
	tp.handshake(t)
	// Only the erasure of keys, 3 × REJECT_AFTER_TIME after the new session, remains.
	expectTick(t, tp, tp.bOnA, tp.clock.Now().Add(3*protocol.RejectAfterTime), ActionZeroKeys)
}

func TestTimerRekeyAfterTimeOnSend(t *testing.T) {
	tp := newTestPairWith(t, PresharedKey{}, Limits{RekeyAfterMessages: 1000, NoJitter: true})
	ki, kr := tp.handshake(t)
	tp.clock.Advance(protocol.RekeyAfterTime - time.Nanosecond)
	if tp.bOnA.RekeyDueOnSend(ki, 0) {
		t.Fatal("rekey due before REKEY_AFTER_TIME")
	}
	if !tp.bOnA.RekeyDueOnSend(ki, 1000) || tp.bOnA.RekeyDueOnSend(ki, 999) {
		t.Fatal("rekey not due exactly from REKEY_AFTER_MESSAGES")
	}
	tp.clock.Advance(time.Nanosecond)
	if !tp.bOnA.RekeyDueOnSend(ki, 0) {
		t.Fatal("initiator: no rekey due at REKEY_AFTER_TIME")
	}
	// The responder does not rekey on time, so the two never initiate at once (paper section 6.2).
	if tp.aOnB.RekeyDueOnSend(kr, 0) {
		t.Fatal("responder: rekey due at REKEY_AFTER_TIME")
	}
	if _, err := tp.a.CreateInitiation(tp.bOnA); err != nil {
		t.Fatalf("rekey initiation: %v", err)
	}
}

func TestTimerRekeyOnReceiveOncePerSession(t *testing.T) {
	tp := newTestPair(t, PresharedKey{})
	ki, kr := tp.handshake(t)
	tp.clock.Advance(protocol.RejectAfterTime - protocol.KeepaliveTimeout - protocol.RekeyTimeout - time.Nanosecond)
	if tp.bOnA.RekeyDueOnReceive(ki) {
		t.Fatal("rekey due on receive too early")
	}
	tp.clock.Advance(time.Nanosecond)
	if !tp.bOnA.RekeyDueOnReceive(ki) {
		t.Fatal("no rekey due on receive at REJECT_AFTER_TIME - KEEPALIVE_TIMEOUT - REKEY_TIMEOUT")
	}
	if tp.bOnA.RekeyDueOnReceive(ki) {
		t.Fatal("rekey on receive asked twice for one session")
	}
	if tp.aOnB.RekeyDueOnReceive(kr) {
		t.Fatal("responder asked to rekey on receive")
	}
	ki2, _ := tp.handshake(t)
	tp.clock.Advance(protocol.RejectAfterTime)
	if !tp.bOnA.RekeyDueOnReceive(ki2) {
		t.Fatal("a new session does not re-enable the receive-side rekey")
	}
}

func TestTimerKeypairExpiry(t *testing.T) {
	tp := newTestPairWith(t, PresharedKey{}, Limits{RejectAfterMessages: 1 << 20, NoJitter: true})
	ki, _ := tp.handshake(t)
	if tp.a.KeypairExpired(ki, 1<<20-1) {
		t.Fatal("fresh keypair expired below REJECT_AFTER_MESSAGES")
	}
	if !tp.a.KeypairExpired(ki, 1<<20) {
		t.Fatal("keypair usable at REJECT_AFTER_MESSAGES")
	}
	tp.clock.Advance(protocol.RejectAfterTime - time.Nanosecond)
	if tp.a.KeypairExpired(ki, 0) {
		t.Fatal("keypair expired before REJECT_AFTER_TIME")
	}
	tp.clock.Advance(time.Nanosecond)
	if !tp.a.KeypairExpired(ki, 0) {
		t.Fatal("keypair usable at REJECT_AFTER_TIME")
	}
	def := NewIdentity(PrivateKey{1}, Limits{})
	if !def.KeypairExpired(&Keypair{Created: time.Now()}, 1<<64-1<<13-1) || def.KeypairExpired(&Keypair{Created: time.Now()}, 1<<64-1<<13-2) {
		t.Fatal("default REJECT_AFTER_MESSAGES is not 2^64 - 2^13 - 1")
	}
}

func TestTimerPassiveKeepalive(t *testing.T) {
	tp := newTestPair(t, PresharedKey{})
	tp.handshake(t)
	p := tp.bOnA
	p.PacketReceived(tp.addrB, true)
	due := tp.clock.Now().Add(protocol.KeepaliveTimeout)
	tp.clock.Advance(time.Second)
	p.PacketReceived(tp.addrB, true) // more data does not push the keepalive back
	expectTick(t, tp, p, due, ActionSendKeepalive)

	// Sending anything in time answers the received data: no keepalive.
	p.PacketReceived(tp.addrB, true)
	tp.clock.Advance(protocol.KeepaliveTimeout / 2)
	p.PacketSent(true)
	tp.clock.Advance(protocol.KeepaliveTimeout)
	if a := p.Tick(); a&ActionSendKeepalive != 0 {
		t.Fatal("keepalive although data was sent")
	}
	// A received keepalive (no data) owes no keepalive back.
	p.PacketReceived(tp.addrB, false)
	tp.clock.Advance(protocol.KeepaliveTimeout)
	if a := p.Tick(); a&ActionSendKeepalive != 0 {
		t.Fatal("keepalive in answer to a keepalive")
	}
}

func TestTimerNewHandshakeWhenDataUnanswered(t *testing.T) {
	tp := newTestPair(t, PresharedKey{})
	tp.handshake(t)
	p := tp.bOnA
	p.PacketSent(true)
	due := tp.clock.Now().Add(protocol.KeepaliveTimeout + protocol.RekeyTimeout)
	tp.clock.Advance(time.Second)
	p.PacketSent(true) // the deadline counts from the first unanswered packet
	expectTick(t, tp, p, due, ActionSendInitiation)

	// Any authenticated packet back (a keepalive will do) shows the session is alive.
	p.PacketSent(true)
	tp.clock.Advance(protocol.KeepaliveTimeout)
	p.PacketReceived(tp.addrB, false)
	tp.clock.Advance(protocol.RekeyTimeout)
	if a := p.Tick(); a&ActionSendInitiation != 0 {
		t.Fatal("new handshake although the peer answered")
	}
}

func TestTimerPersistentKeepalive(t *testing.T) {
	tp := newTestPair(t, PresharedKey{})
	p := tp.bOnA
	const interval = 25 * time.Second
	p.SetPersistentKeepalive(interval)
	if a := p.Tick(); a != ActionSendKeepalive {
		t.Fatalf("Tick right after enabling persistent keepalive = %b, want a keepalive", a)
	}
	// Without keys the data plane initiates instead; that is traffic, so it re-arms the interval.
	if _, err := tp.a.CreateInitiation(p); err != nil {
		t.Fatal(err)
	}
	res, err := tp.b.HandleMessage(mustInitiation(t, tp), tp.addrA)
	if err == nil {
		_, err = tp.a.HandleMessage(res.Reply, tp.addrB)
	}
	if err != nil {
		t.Fatal(err)
	}
	expectTick(t, tp, p, tp.clock.Now().Add(interval), ActionSendKeepalive)
	p.PacketSent(false)
	tp.clock.Advance(10 * time.Second)
	p.PacketReceived(tp.addrB, false)
	expectTick(t, tp, p, tp.clock.Now().Add(interval), ActionSendKeepalive)
	p.SetPersistentKeepalive(0)
	p.PacketSent(false)
	tp.clock.Advance(interval)
	if a := p.Tick(); a&ActionSendKeepalive != 0 {
		t.Fatal("persistent keepalive after turning it off")
	}
}

// mustInitiation makes a fresh initiation from a to b, REKEY_TIMEOUT after the last one.
func mustInitiation(t *testing.T, tp *testPair) []byte {
	t.Helper()
	tp.clock.Advance(protocol.RekeyTimeout)
	init, err := tp.a.CreateInitiation(tp.bOnA)
	if err != nil {
		t.Fatal(err)
	}
	return init
}

func TestTimerZeroKeysAfterThreeRejectAfterTimes(t *testing.T) {
	tp := newTestPair(t, PresharedKey{})
	tp.handshake(t)
	tp.clock.Advance(protocol.RejectAfterTime)
	tp.clock.Advance(protocol.RekeyTimeout)
	tp.handshake(t) // a new session pushes the erasure back
	p := tp.bOnA
	p.PacketReceived(tp.addrB, false)
	expectTick(t, tp, p, tp.clock.Now().Add(3*protocol.RejectAfterTime), ActionZeroKeys)

	// Zeroing also drops a pending initiation and its index.
	tp.handshake(t)
	sessionAt := tp.clock.Now()
	tp.clock.Advance(protocol.RekeyTimeout)
	if _, err := tp.a.CreateInitiation(p); err != nil {
		t.Fatal(err)
	}
	before := tp.a.Indices().Len()
	tp.clock.Advance(sessionAt.Add(3 * protocol.RejectAfterTime).Sub(tp.clock.Now()))
	if a := p.Tick(); a&ActionZeroKeys == 0 {
		t.Fatalf("Tick = %b, no zeroing", a)
	}
	if got := tp.a.Indices().Len(); got != before-1 {
		t.Fatalf("%d indices after zeroing, want %d", got, before-1)
	}
}

func TestDeviceNextDeadlineIsEarliestPeer(t *testing.T) {
	tp := newTestPair(t, PresharedKey{})
	if _, ok := tp.a.NextDeadline(); ok {
		t.Fatal("deadline armed on a fresh device")
	}
	other, err := tp.a.AddPeer(mustGenerate(t).PublicKey(), PresharedKey{})
	if err != nil {
		t.Fatal(err)
	}
	other.SetPersistentKeepalive(time.Hour)
	if _, err := tp.a.CreateInitiation(tp.bOnA); err != nil {
		t.Fatal(err)
	}
	next, ok := tp.a.NextDeadline()
	if !ok || !next.Equal(tp.clock.Now()) {
		t.Fatalf("device deadline %v, want the persistent keepalive due now", next)
	}
	other.Tick()
	other.PacketSent(false)
	next, _ = tp.a.NextDeadline()
	if want := tp.clock.Now().Add(protocol.RekeyTimeout); !next.Equal(want) {
		t.Fatalf("device deadline %v, want the retransmission at %v", next, want)
	}
}
