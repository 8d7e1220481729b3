// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package handshake

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"net/netip"
	"time"

	"github.com/wirebatch/wirebatch/protocol"
)

// Noise_IKpsk2 as WireGuard runs it (paper section 5.4.2 and 5.4.3). Notation of the paper: C is the
// chaining key, H the hash, e/s ephemeral/static keys, i/r initiator/responder, Q the preshared
// key. Each function below lists the paper's steps in order. Shared secrets and one-time keys held in
// variables are cleared as soon as they are used (Go promises nothing about copies the compiler
// makes); the ephemeral private key lives only until the response is consumed or abandoned.

// initiationState is the initiator's half of a handshake between CreateInitiation and the
// response: everything consumeResponse needs to continue the transcript.
type initiationState struct {
	active     bool
	localIndex uint32
	ephemeral  PrivateKey // E_i^priv
	chainKey   [32]byte
	hash       [32]byte
}

func (s *initiationState) wipe() {
	clear(s.ephemeral[:])
	clear(s.chainKey[:])
	clear(s.hash[:])
	s.active = false
}

// abandonInitiation drops the pending initiation, if any, and frees its index. p.mu is held.
func (p *PeerState) abandonInitiation() {
	if p.initiation.active {
		p.device.indices.Release(p.initiation.localIndex)
	}
	p.initiation.wipe()
}

// mixHash is H = HASH(H || data).
func mixHash(h *[32]byte, data []byte) { *h = hashOf(h[:], data) }

// mixKey is C = KDF1(C, input).
func mixKey(ck *[32]byte, input []byte) {
	t1, _, _ := kdf(1, ck[:], input)
	*ck = t1
}

// mixKeyPair is (C, k) = KDF2(C, input), returning k.
func mixKeyPair(ck *[32]byte, input []byte) (k [32]byte) {
	t1, t2, _ := kdf(2, ck[:], input)
	*ck = t1
	return t2
}

// CreateInitiation makes a handshake initiation (message type 1, 148 bytes) to p and returns it
// for the data plane to send to p.Endpoint(). A previous initiation still awaiting its response is
// abandoned. It records the initiation as sent for p's timers (retransmission after REKEY_TIMEOUT,
// paper section 6.4) and refuses with ErrInitiationTooSoon when an initiation or response went to
// p less than REKEY_TIMEOUT ago, so it can be called on every trigger without flooding the peer.
func (d *Identity) CreateInitiation(p *PeerState) ([]byte, error) {
	d.keyMu.RLock()
	defer d.keyMu.RUnlock()
	s := d.static.Load()
	if s.private.IsZero() {
		return nil, ErrNoPrivateKey
	}
	now := d.cfg.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.removed {
		return nil, ErrUnknownPeer
	}
	if last := p.timers.lastHandshakeSent; !last.IsZero() && now.Sub(last) < d.cfg.RekeyTimeout {
		return nil, ErrInitiationTooSoon
	}
	ephemeral, err := GeneratePrivateKey()
	if err != nil {
		return nil, err
	}
	defer clear(ephemeral[:])
	p.abandonInitiation()

	msg := make([]byte, protocol.InitiationSize)
	binary.LittleEndian.PutUint32(msg, uint32(protocol.TypeInitiation))
	localIndex := d.indices.allocate(p, IndexHandshake)
	binary.LittleEndian.PutUint32(msg[initSender:], localIndex)

	// C_i = HASH(CONSTRUCTION); H_i = HASH(HASH(C_i || IDENTIFIER) || S_r^pub)
	ck := initialChainKey
	h := hashOf(initialHash[:], p.public[:])
	defer clear(ck[:])

	// msg.ephemeral = E_i^pub; C_i = KDF1(C_i, E_i^pub); H_i = HASH(H_i || msg.ephemeral)
	ephemeralPublic := ephemeral.PublicKey()
	copy(msg[initEphemeral:initStatic], ephemeralPublic[:])
	mixKey(&ck, ephemeralPublic[:])
	mixHash(&h, ephemeralPublic[:])

	// (C_i, κ) = KDF2(C_i, DH(E_i^priv, S_r^pub)); msg.static = AEAD(κ, 0, S_i^pub, H_i)
	es, err := dh(&ephemeral, p.public[:])
	if err != nil {
		d.indices.Release(localIndex)
		return nil, fmt.Errorf("%w: %v", ErrInvalidPeerKey, err)
	}
	k := mixKeyPair(&ck, es[:])
	clear(es[:])
	sealOnce(msg[initStatic:initTimestamp], &k, s.public[:], h[:])
	mixHash(&h, msg[initStatic:initTimestamp])

	// (C_i, κ) = KDF2(C_i, DH(S_i^priv, S_r^pub)); msg.timestamp = AEAD(κ, 0, TAI64N(), H_i)
	k = mixKeyPair(&ck, p.staticStatic[:])
	timestamp := tai64n(now)
	sealOnce(msg[initTimestamp:initMAC1], &k, timestamp[:], h[:])
	clear(k[:])
	mixHash(&h, msg[initTimestamp:initMAC1])

	p.cookies.addMACs(msg, initMAC1, now)
	p.initiation = initiationState{active: true, localIndex: localIndex, ephemeral: ephemeral, chainKey: ck, hash: h}
	p.timers.handshakeInitiated(&d.cfg, now)
	p.timers.packetSent(now)
	return msg, nil
}

// consumeInitiation authenticates an initiation (its length and MAC1 already checked), and on
// success answers it with a response and derives the responder's keypair.
func (d *Identity) consumeInitiation(msg []byte, src netip.AddrPort) (*PeerState, []byte, *Keypair, error) {
	// C_r = HASH(CONSTRUCTION); H_r = HASH(HASH(C_r || IDENTIFIER) || S_r^pub)
	d.keyMu.RLock()
	defer d.keyMu.RUnlock()
	s := d.static.Load()
	ck := initialChainKey
	h := s.responderHash
	defer clear(ck[:])

	// C_r = KDF1(C_r, msg.ephemeral); H_r = HASH(H_r || msg.ephemeral)
	initiatorEphemeral := msg[initEphemeral:initStatic]
	mixKey(&ck, initiatorEphemeral)
	mixHash(&h, initiatorEphemeral)

	// (C_r, κ) = KDF2(C_r, DH(S_r^priv, E_i^pub)); S_i^pub = AEAD-open(κ, 0, msg.static, H_r)
	es, err := dh(&s.private, initiatorEphemeral)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("%w: initiation ephemeral key: %v", ErrDecrypt, err)
	}
	k := mixKeyPair(&ck, es[:])
	clear(es[:])
	defer clear(k[:])
	var initiatorStatic PublicKey
	if !openOnce(initiatorStatic[:], &k, msg[initStatic:initTimestamp], h[:]) {
		return nil, nil, nil, fmt.Errorf("%w: initiation static key", ErrDecrypt)
	}
	mixHash(&h, msg[initStatic:initTimestamp])

	p := d.Peer(initiatorStatic)
	if p == nil {
		return nil, nil, nil, fmt.Errorf("%w: initiation from %v", ErrUnknownPeer, initiatorStatic)
	}
	now := d.cfg.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.removed {
		return nil, nil, nil, fmt.Errorf("%w: initiation from a removed peer", ErrUnknownPeer)
	}
	// A peer of a low-order key has a zero static-static secret (AddPeer), which anyone can
	// compute: its initiations are refused before they touch its state, as the kernel's
	// mix_precomputed_dh and wireguard-go refuse a zero precomputed secret.
	if isZero(p.staticStatic[:]) {
		return nil, nil, nil, fmt.Errorf("%w: initiation from a peer whose key is of low order", ErrInvalidPeerKey)
	}

	// (C_r, κ) = KDF2(C_r, DH(S_r^priv, S_i^pub)); timestamp = AEAD-open(κ, 0, msg.timestamp, H_r)
	k = mixKeyPair(&ck, p.staticStatic[:])
	var timestamp [timestampSize]byte
	if !openOnce(timestamp[:], &k, msg[initTimestamp:initMAC1], h[:]) {
		return nil, nil, nil, fmt.Errorf("%w: initiation timestamp", ErrDecrypt)
	}
	mixHash(&h, msg[initTimestamp:initMAC1])

	// A replayed initiation would make us answer and reset the session; only a strictly newer
	// timestamp than the last accepted one from this peer proves freshness (paper section 5.4.2).
	if bytes.Compare(timestamp[:], p.lastTimestamp[:]) <= 0 {
		return nil, nil, nil, ErrReplayedTimestamp
	}
	// At most one initiation per peer every initiationRate, as wireguard-go: a peer's initiations
	// (or a replay of fresh-looking ones an attacker captured) cannot make us recompute its session
	// faster than that.
	if !p.lastInitiation.IsZero() && now.Sub(p.lastInitiation) < initiationRate {
		return nil, nil, nil, ErrInitiationFlood
	}
	p.lastInitiation = now
	p.lastTimestamp = timestamp
	p.endpoint = src
	p.timers.packetReceived(now)

	response, kp, err := d.createResponse(p, &ck, &h, initiatorEphemeral, binary.LittleEndian.Uint32(msg[initSender:]), now)
	if err != nil {
		return nil, nil, nil, err
	}
	return p, response, kp, nil
}

// createResponse continues the responder's transcript (C, H) with a response (message type 2,
// 92 bytes) and derives the responder's keypair. p.mu is held.
func (d *Identity) createResponse(p *PeerState, ck, h *[32]byte, initiatorEphemeral []byte, remoteIndex uint32, now time.Time) ([]byte, *Keypair, error) {
	ephemeral, err := GeneratePrivateKey()
	if err != nil {
		return nil, nil, err
	}
	defer clear(ephemeral[:])

	msg := make([]byte, protocol.ResponseSize)
	binary.LittleEndian.PutUint32(msg, uint32(protocol.TypeResponse))
	binary.LittleEndian.PutUint32(msg[respReceiver:], remoteIndex)

	// msg.ephemeral = E_r^pub; C_r = KDF1(C_r, E_r^pub); H_r = HASH(H_r || msg.ephemeral)
	ephemeralPublic := ephemeral.PublicKey()
	copy(msg[respEphemeral:respEmpty], ephemeralPublic[:])
	mixKey(ck, ephemeralPublic[:])
	mixHash(h, ephemeralPublic[:])

	// C_r = KDF1(C_r, DH(E_r^priv, E_i^pub)); C_r = KDF1(C_r, DH(E_r^priv, S_i^pub))
	ee, err := dh(&ephemeral, initiatorEphemeral)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: initiation ephemeral key: %v", ErrDecrypt, err)
	}
	mixKey(ck, ee[:])
	clear(ee[:])
	se, err := dh(&ephemeral, p.public[:])
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %v", ErrInvalidPeerKey, err)
	}
	mixKey(ck, se[:])
	clear(se[:])

	// (C_r, τ, κ) = KDF3(C_r, Q); H_r = HASH(H_r || τ); msg.empty = AEAD(κ, 0, ε, H_r)
	t1, tau, k := kdf(3, ck[:], p.psk[:])
	*ck = t1
	mixHash(h, tau[:])
	clear(tau[:])
	sealOnce(msg[respEmpty:respMAC1], &k, nil, h[:])
	clear(k[:])
	mixHash(h, msg[respEmpty:respMAC1])

	localIndex := d.indices.allocate(p, IndexKeypair)
	binary.LittleEndian.PutUint32(msg[respSender:], localIndex)
	p.cookies.addMACs(msg, respMAC1, now)

	kp := deriveKeypair(ck, false, localIndex, remoteIndex, now)
	p.timers.lastHandshakeSent = now
	p.timers.sessionDerived(&d.cfg, now)
	p.timers.packetSent(now)
	return msg, kp, nil
}

// consumeResponse authenticates a response (its length and MAC1 already checked) against our
// pending initiation and derives the initiator's keypair.
func (d *Identity) consumeResponse(msg []byte, src netip.AddrPort) (*PeerState, *Keypair, error) {
	d.keyMu.RLock()
	defer d.keyMu.RUnlock()
	receiver := binary.LittleEndian.Uint32(msg[respReceiver:])
	p, kind, ok := d.indices.Lookup(receiver)
	if !ok || kind != IndexHandshake {
		return nil, nil, fmt.Errorf("%w: response to %#x", ErrUnknownIndex, receiver)
	}
	now := d.cfg.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	st := &p.initiation
	if p.removed || !st.active || st.localIndex != receiver {
		return nil, nil, fmt.Errorf("%w: response to %#x, no such pending initiation", ErrUnknownIndex, receiver)
	}

	// Work on copies: a forged response must leave the pending initiation intact.
	ck, h := st.chainKey, st.hash
	defer clear(ck[:])

	// C_i = KDF1(C_i, msg.ephemeral); H_i = HASH(H_i || msg.ephemeral)
	responderEphemeral := msg[respEphemeral:respEmpty]
	mixKey(&ck, responderEphemeral)
	mixHash(&h, responderEphemeral)

	// C_i = KDF1(C_i, DH(E_i^priv, E_r^pub)); C_i = KDF1(C_i, DH(S_i^priv, E_r^pub))
	ee, err := dh(&st.ephemeral, responderEphemeral)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: response ephemeral key: %v", ErrDecrypt, err)
	}
	mixKey(&ck, ee[:])
	clear(ee[:])
	se, err := dh(&d.static.Load().private, responderEphemeral)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: response ephemeral key: %v", ErrDecrypt, err)
	}
	mixKey(&ck, se[:])
	clear(se[:])

	// (C_i, τ, κ) = KDF3(C_i, Q); H_i = HASH(H_i || τ); AEAD-open(κ, 0, msg.empty, H_i)
	t1, tau, k := kdf(3, ck[:], p.psk[:])
	ck = t1
	mixHash(&h, tau[:])
	clear(tau[:])
	ok = openOnce(nil, &k, msg[respEmpty:respMAC1], h[:])
	clear(k[:])
	if !ok {
		return nil, nil, fmt.Errorf("%w: response", ErrDecrypt)
	}

	kp := deriveKeypair(&ck, true, receiver, binary.LittleEndian.Uint32(msg[respSender:]), now)
	d.indices.promote(receiver) // the handshake's index now names the keypair
	st.wipe()
	p.endpoint = src
	p.timers.sessionDerived(&d.cfg, now)
	p.timers.handshakeComplete(now)
	p.timers.packetReceived(now)
	return p, kp, nil
}

// deriveKeypair is (T_i^send = T_r^recv, T_i^recv = T_r^send) = KDF2(C, ε) (paper section 5.4.5).
func deriveKeypair(ck *[32]byte, initiator bool, localIndex, remoteIndex uint32, now time.Time) *Keypair {
	t1, t2, _ := kdf(2, ck[:], nil)
	kp := &Keypair{LocalIndex: localIndex, RemoteIndex: remoteIndex, Initiator: initiator, Created: now}
	if initiator {
		kp.Send, kp.Receive = t1, t2
	} else {
		kp.Send, kp.Receive = t2, t1
	}
	clear(t1[:])
	clear(t2[:])
	return kp
}
