// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package handshake

import (
	"net/netip"
	"sync"
	"time"
)

// PeerState is one remote static identity known to an Identity: its keys, its endpoint, the handshake in
// flight, the cookie it sent us, and its timers. All methods are safe for concurrent use.
type PeerState struct {
	device *Identity
	public PublicKey

	mu            sync.Mutex
	removed       bool // set by Identity.RemovePeer: a handshake racing with the removal fails
	psk           PresharedKey
	staticStatic  [32]byte // DH(our static private, its static public); Identity.SetPrivateKey recomputes it
	endpoint      netip.AddrPort
	initiation    initiationState     // our initiation awaiting its response
	lastTimestamp [timestampSize]byte // newest TAI64N accepted from its initiations
	// lastInitiation is when we last accepted an initiation from it (initiationRate).
	lastInitiation time.Time
	cookies        cookieState
	timers         timerState
}

// PublicKey returns the peer's static public key.
func (p *PeerState) PublicKey() PublicKey { return p.public }

// SetPresharedKey sets the symmetric key Q of paper section 5.4.3; the zero key means none.
func (p *PeerState) SetPresharedKey(psk PresharedKey) {
	p.mu.Lock()
	p.psk = psk
	p.mu.Unlock()
}

// Endpoint returns where to send to the peer: the configured endpoint until an authenticated packet
// arrives, then that packet's source (roaming, paper section 2.1). It is invalid while unknown.
func (p *PeerState) Endpoint() netip.AddrPort {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.endpoint
}

// SetEndpoint sets the endpoint from configuration.
func (p *PeerState) SetEndpoint(ep netip.AddrPort) {
	p.mu.Lock()
	p.endpoint = ep
	p.mu.Unlock()
}

// SetPersistentKeepalive sets the persistent keepalive interval (wg(8) PersistentKeepalive); zero turns it
// off. A non-zero interval is due at once, so a peer behind NAT opens its mapping right away.
func (p *PeerState) SetPersistentKeepalive(interval time.Duration) {
	now := p.device.cfg.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.timers.persistentInterval = interval
	p.timers.persistent = time.Time{}
	if interval > 0 {
		p.timers.persistent = now
	}
}

// LastHandshake returns when the latest handshake completed, zero if none has.
func (p *PeerState) LastHandshake() time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.timers.lastHandshake
}

// PacketSent is the data plane's event for an authenticated transport message sent to the peer;
// data is false for a keepalive (an empty one). Timers, paper section 6.
func (p *PeerState) PacketSent(data bool) {
	now := p.device.cfg.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.timers.packetSent(now)
	if data {
		p.timers.dataSent(&p.device.cfg, now)
	}
}

// PacketReceived is the data plane's event for a transport message from the peer that
// authenticated and passed the replay check; data is false for a keepalive. The peer's endpoint
// moves to src (roaming, paper section 2.1) when src is valid.
func (p *PeerState) PacketReceived(src netip.AddrPort, data bool) {
	now := p.device.cfg.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	if src.IsValid() {
		p.endpoint = src
	}
	p.timers.packetReceived(now)
	if data {
		p.timers.dataReceived(&p.device.cfg, now)
	}
}

// KeypairConfirmed is the data plane's event for the first transport message received under a
// keypair we derived as responder (Keypair.Initiator false): only now may it send with that
// keypair, and the handshake counts as complete. Until then the responder has no confirmation that
// the initiator derived the same keys; wireguard-go waits the same way.
func (p *PeerState) KeypairConfirmed() {
	now := p.device.cfg.Now()
	p.mu.Lock()
	p.timers.handshakeComplete(now)
	p.mu.Unlock()
}

// RekeyDueOnSend reports whether sending under kp, whose next counter is counter, calls for a new
// handshake (paper section 6.2): after REKEY_AFTER_MESSAGES messages, or, for the initiator's
// keypair, after REKEY_AFTER_TIME. The data plane then calls Identity.CreateInitiation (which itself
// refuses to send more than one initiation per REKEY_TIMEOUT) and keeps sending under kp meanwhile.
func (p *PeerState) RekeyDueOnSend(kp *Keypair, counter uint64) bool {
	cfg := &p.device.cfg
	return counter >= cfg.RekeyAfterMessages ||
		(kp.Initiator && cfg.Now().Sub(kp.Created) >= cfg.RekeyAfterTime)
}

// RekeyDueOnReceive reports whether a transport message received under kp calls for a new
// handshake: the initiator's keypair is within KEEPALIVE_TIMEOUT + REKEY_TIMEOUT of
// REJECT_AFTER_TIME (paper section 6.2: the initiator rekeys even when it only receives, before the
// keypair expires). True at most once per session.
func (p *PeerState) RekeyDueOnReceive(kp *Keypair) bool {
	cfg := &p.device.cfg
	if !kp.Initiator || cfg.Now().Sub(kp.Created) < cfg.RejectAfterTime-cfg.KeepaliveTimeout-cfg.RekeyTimeout {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.timers.receiveRekeySent {
		return false
	}
	p.timers.receiveRekeySent = true
	return true
}

// Tick fires the peer's due timers and returns the actions the data plane must take, zero if none.
func (p *PeerState) Tick() Action {
	now := p.device.cfg.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	a := p.timers.tick(&p.device.cfg, now)
	if a&ActionZeroKeys != 0 {
		p.abandonInitiation()
	}
	return a
}

// NextDeadline returns when Tick next has something to fire; ok is false when no timer is armed.
func (p *PeerState) NextDeadline() (next time.Time, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.timers.nextDeadline()
}
