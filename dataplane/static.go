// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package dataplane

import (
	"net/netip"
	"sync"
	"sync/atomic"
)

// StaticKeys is a Handshaker for tests and for users who manage keys themselves: it installs the
// keypairs it is given, counts and ignores handshake messages, and records the events it sees. It
// never rekeys, so a session it installs stops after protocol.RejectAfterTime or protocol.RejectAfterMessages, as
// WireGuard requires; install a fresh one (new keys, new indices) before then. Both ends should
// install as Initiator so that each sends at once, without waiting for a confirmation.
type StaticKeys struct {
	// dev is Stored once by Attach (from NewDevice, before the device starts) and Loaded by
	// AddPeer, possibly from another goroutine: the pair publishes the Device.
	dev        atomic.Pointer[Device]
	handshakes atomic.Uint64 // a count only

	mu     sync.Mutex
	events map[*Peer]Event
}

// Attach implements Handshaker.
func (s *StaticKeys) Attach(d *Device) { s.dev.Store(d) }

// HandleHandshake implements Handshaker: it counts the message.
func (s *StaticKeys) HandleHandshake(msg []byte, src netip.AddrPort) { s.handshakes.Add(1) }

// PeerEvent implements Handshaker: it records the events.
func (s *StaticKeys) PeerEvent(p *Peer, ev Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.events == nil {
		s.events = map[*Peer]Event{}
	}
	s.events[p] |= ev
}

// KeypairRetired implements Handshaker: static keys have no index allocator to tell.
func (s *StaticKeys) KeypairRetired(kp *Keypair) {}

// AddPeer adds a peer to the attached device and installs its keypair.
func (s *StaticKeys) AddPeer(pc PeerConfig, kc KeypairConfig) (*Peer, error) {
	d := s.dev.Load()
	if d == nil {
		return nil, ErrDeviceClosed
	}
	p := d.AddPeer(pc)
	if _, err := d.InstallKeypair(p, kc); err != nil {
		d.RemovePeer(p)
		return nil, err
	}
	return p, nil
}

// Events returns every event reported for p so far.
func (s *StaticKeys) Events(p *Peer) Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.events[p]
}

// Handshakes returns how many handshake messages arrived.
func (s *StaticKeys) Handshakes() uint64 { return s.handshakes.Load() }
