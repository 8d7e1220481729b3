// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package handshake

import (
	"errors"
	"net/netip"
	"testing"
)

func TestSetPrivateKeyAtRunTime(t *testing.T) {
	tp := newTestPair(t, PresharedKey{7})
	tp.handshake(t)

	// An initiation in flight to b's old identity, and b's new key.
	tp.clock.Advance(tp.a.cfg.RekeyTimeout)
	stale, err := tp.a.CreateInitiation(tp.bOnA)
	if err != nil {
		t.Fatal(err)
	}
	oldB := tp.b.PublicKey()
	newKey := mustGenerate(t)
	if removed := tp.b.SetPrivateKey(newKey); removed != nil {
		t.Fatalf("SetPrivateKey removed %v, want no peer", removed.PublicKey())
	}
	if tp.b.PublicKey() != newKey.PublicKey() {
		t.Fatal("PublicKey does not follow SetPrivateKey")
	}
	if _, err := tp.b.HandleMessage(stale, tp.addrA); !errors.Is(err, ErrMAC1) {
		t.Fatalf("initiation to the old identity: %v, want ErrMAC1", err)
	}

	// a learns b's new key; both directions handshake again, with b's recomputed static-static
	// secret for a.
	tp.a.RemovePeer(oldB)
	if tp.bOnA, err = tp.a.AddPeer(tp.b.PublicKey(), PresharedKey{7}); err != nil {
		t.Fatal(err)
	}
	tp.bOnA.SetEndpoint(tp.addrB)
	tp.clock.Advance(tp.a.cfg.RekeyTimeout)
	ki, kr := tp.handshake(t)
	if ki.Send != kr.Receive {
		t.Fatal("keys after the change do not pair up")
	}
	tp.clock.Advance(tp.a.cfg.RekeyTimeout)
	init, err := tp.b.CreateInitiation(tp.aOnB)
	if err != nil {
		t.Fatal(err)
	}
	res, err := tp.a.HandleMessage(init, tp.addrB)
	if err != nil || res.Peer != tp.bOnA {
		t.Fatalf("initiation from b's new identity: peer %v, %v", res.Peer, err)
	}
}

func TestSetPrivateKeyAbandonsPendingInitiation(t *testing.T) {
	tp := newTestPair(t, PresharedKey{})
	if _, err := tp.a.CreateInitiation(tp.bOnA); err != nil {
		t.Fatal(err)
	}
	if n := tp.a.Indices().Len(); n != 1 {
		t.Fatalf("%d indices in use, want the initiation's", n)
	}
	tp.a.SetPrivateKey(mustGenerate(t))
	if n := tp.a.Indices().Len(); n != 0 {
		t.Fatalf("%d indices in use after SetPrivateKey, want 0", n)
	}
	// The old initiation is void, so a new one may go at once rather than after REKEY_TIMEOUT.
	if _, err := tp.a.CreateInitiation(tp.bOnA); err != nil {
		t.Fatalf("initiation right after SetPrivateKey: %v", err)
	}
}

func TestSetPrivateKeyRemovesPeerWithOwnKey(t *testing.T) {
	tp := newTestPair(t, PresharedKey{})
	bKey := mustGenerate(t)
	other, err := tp.a.AddPeer(bKey.PublicKey(), PresharedKey{})
	if err != nil {
		t.Fatal(err)
	}
	if removed := tp.a.SetPrivateKey(bKey); removed != other {
		t.Fatalf("SetPrivateKey removed %v, want the peer with the new public key", removed)
	}
	if tp.a.Peer(bKey.PublicKey()) != nil || tp.a.Peer(tp.b.PublicKey()) != tp.bOnA {
		t.Fatal("wrong peers left after SetPrivateKey")
	}
}

func TestNoPrivateKey(t *testing.T) {
	clock := newFakeClock()
	cfg := Limits{NoJitter: true, Now: clock.Now}
	a := NewIdentity(PrivateKey{}, cfg)
	b := NewIdentity(mustGenerate(t), cfg)
	if a.PublicKey() != (PublicKey{}) {
		t.Fatal("an Identity without a private key has a public key")
	}
	// Peers can be configured before the key, as on a WireGuard interface.
	bOnA, err := a.AddPeer(b.PublicKey(), PresharedKey{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.CreateInitiation(bOnA); !errors.Is(err, ErrNoPrivateKey) {
		t.Fatalf("CreateInitiation without a key: %v, want ErrNoPrivateKey", err)
	}
	aKey := mustGenerate(t)
	aOnB, err := b.AddPeer(aKey.PublicKey(), PresharedKey{})
	if err != nil {
		t.Fatal(err)
	}
	init, err := b.CreateInitiation(aOnB)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.HandleMessage(init, netip.MustParseAddrPort("192.0.2.2:51820")); !errors.Is(err, ErrNoPrivateKey) {
		t.Fatalf("initiation to an Identity without a key: %v, want ErrNoPrivateKey", err)
	}
	a.SetPrivateKey(aKey)
	res, err := a.HandleMessage(init, netip.MustParseAddrPort("192.0.2.2:51820"))
	if err != nil || res.Peer != bOnA || res.Keypair == nil {
		t.Fatalf("initiation once the key is set: %+v, %v", res, err)
	}
}

// TestSetPrivateKeyWipesOldKey: the key SetPrivateKey replaces is wiped, and handshakes running on
// other goroutines meanwhile (under -race: no access races the wipe) either complete under one
// identity or fail; none panics.
func TestSetPrivateKeyWipesOldKey(t *testing.T) {
	tp := newTestPair(t, PresharedKey{})
	old := tp.b.static.Load()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 50 {
			tp.clock.Advance(tp.a.cfg.RekeyTimeout)
			if init, err := tp.a.CreateInitiation(tp.bOnA); err == nil {
				tp.b.HandleMessage(init, tp.addrA) // may fail after the change: ErrMAC1
			}
		}
	}()
	tp.b.SetPrivateKey(mustGenerate(t))
	<-done
	if !old.private.IsZero() {
		t.Fatal("the replaced private key was not wiped")
	}
	if tp.b.static.Load().private.IsZero() {
		t.Fatal("the new private key was wiped")
	}
}
