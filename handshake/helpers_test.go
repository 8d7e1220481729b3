// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package handshake

import (
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/wirebatch/wirebatch/protocol"
)

// fakeClock is the injected clock of every test: time moves only when the test says so.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// testPair is two devices that know each other, sharing one fake clock.
type testPair struct {
	clock        *fakeClock
	a, b         *Identity
	bOnA, aOnB   *PeerState // b as a peer of a, a as a peer of b
	addrA, addrB netip.AddrPort
}

func newTestPair(t testing.TB, psk PresharedKey) *testPair {
	t.Helper()
	return newTestPairWith(t, psk, Limits{NoJitter: true})
}

// newTestPairWith makes a pair with cfg's limits and a fresh fake clock.
func newTestPairWith(t testing.TB, psk PresharedKey, cfg Limits) *testPair {
	t.Helper()
	clock := newFakeClock()
	cfg.Now = clock.Now
	tp := &testPair{
		clock: clock,
		a:     NewIdentity(mustGenerate(t), cfg),
		b:     NewIdentity(mustGenerate(t), cfg),
		addrA: netip.MustParseAddrPort("192.0.2.1:51820"),
		addrB: netip.MustParseAddrPort("[2001:db8::2]:51821"),
	}
	var err error
	if tp.bOnA, err = tp.a.AddPeer(tp.b.PublicKey(), psk); err != nil {
		t.Fatal(err)
	}
	if tp.aOnB, err = tp.b.AddPeer(tp.a.PublicKey(), psk); err != nil {
		t.Fatal(err)
	}
	tp.bOnA.SetEndpoint(tp.addrB)
	tp.aOnB.SetEndpoint(tp.addrA)
	return tp
}

func mustGenerate(t testing.TB) PrivateKey {
	t.Helper()
	k, err := GeneratePrivateKey()
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// handshake runs a full handshake initiated by a and returns both keypairs.
func (tp *testPair) handshake(t testing.TB) (initiator, responder *Keypair) {
	t.Helper()
	init, err := tp.a.CreateInitiation(tp.bOnA)
	if err != nil {
		t.Fatalf("CreateInitiation: %v", err)
	}
	res, err := tp.b.HandleMessage(init, tp.addrA)
	if err != nil {
		t.Fatalf("initiation: %v", err)
	}
	if res.Peer != tp.aOnB || res.Keypair == nil || len(res.Reply) != protocol.ResponseSize {
		t.Fatalf("initiation result %+v", res)
	}
	res2, err := tp.a.HandleMessage(res.Reply, tp.addrB)
	if err != nil {
		t.Fatalf("response: %v", err)
	}
	if res2.Peer != tp.bOnA || res2.Keypair == nil || res2.Reply != nil {
		t.Fatalf("response result %+v", res2)
	}
	return res2.Keypair, res.Keypair
}
