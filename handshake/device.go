// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package handshake

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wirebatch/wirebatch/protocol"
)

// Identity is our side of the handshake: the local static identity, the peers by public key, the
// index table, the cookie checker and the handshake rate limiter. All methods are safe for
// concurrent use. SetPrivateKey changes the static identity at run time.
type Identity struct {
	cfg Limits

	// static is replaced as a whole by SetPrivateKey, under mu's write lock; every message Loads it
	// once, so a message handled across a change sees one identity (and fails to authenticate).
	static atomic.Pointer[staticIdentity]
	// keyMu is held for reading wherever a static private key is used (the DH of a handshake), and
	// for writing by SetPrivateKey to wipe the key it replaced once no handshake uses it. It is
	// never taken while mu is held, nor mu while it is held for writing.
	keyMu sync.RWMutex

	indices   *IndexTable
	limiter   *rateLimiter
	underLoad atomic.Bool // written by the data plane, read per message; no ordering with other state

	// mu guards peers, and orders SetPrivateKey against AddPeer: a peer's static-static secret is
	// computed under it from the static identity of the moment.
	mu    sync.RWMutex
	peers map[PublicKey]*PeerState
}

// staticIdentity is the local static key pair and what derives from it. Immutable.
type staticIdentity struct {
	private PrivateKey
	public  PublicKey // zero while private is zero (no identity configured)
	// responderHash is H = HASH(HASH(C || IDENTIFIER) || our public key): the hash every
	// initiation addressed to us starts from (paper section 5.4.2).
	responderHash [32]byte
	cookies       *cookieChecker
}

func newStaticIdentity(private PrivateKey, now func() time.Time) *staticIdentity {
	s := &staticIdentity{private: private}
	if !private.IsZero() {
		s.public = private.PublicKey()
	}
	s.responderHash = hashOf(initialHash[:], s.public[:])
	s.cookies = newCookieChecker(&s.public, now)
	return s
}

// NewIdentity returns an Identity with the static private key private and cfg's limits (zero fields take
// the defaults of paper section 6.1). The zero private key means none yet: peers may be added, but
// no handshake is made or answered (ErrNoPrivateKey) until SetPrivateKey, as a WireGuard interface
// without a key.
func NewIdentity(private PrivateKey, cfg Limits) *Identity {
	cfg = cfg.withDefaults()
	d := &Identity{
		cfg:     cfg,
		indices: newIndexTable(),
		limiter: newRateLimiter(cfg.Now),
		peers:   make(map[PublicKey]*PeerState),
	}
	d.static.Store(newStaticIdentity(private, cfg.Now))
	return d
}

// PublicKey returns the identity's static public key, zero while it has no private key.
func (d *Identity) PublicKey() PublicKey { return d.static.Load().public }

// SetPrivateKey replaces the static private key (the zero key: none). Every peer's static-static
// secret is recomputed and its pending initiation abandoned, and the peer whose public key is the
// new public key, if any, is removed (a peer cannot be ourselves), as wireguard-go does. Sessions
// made under the old key stay with the data plane, which must expire them (ControlPlane's
// SetPrivateKey does); the peers may initiate again at once. It reports the removed peer, if any.
func (d *Identity) SetPrivateKey(private PrivateKey) (removed *PeerState) {
	old := d.replaceStatic(private, &removed)
	// The old key retires: wiped once the handshakes that loaded it are done.
	d.keyMu.Lock()
	clear(old.private[:])
	d.keyMu.Unlock()
	return removed
}

// replaceStatic is SetPrivateKey under mu; it returns the identity it replaced.
func (d *Identity) replaceStatic(private PrivateKey, removed **PeerState) (old *staticIdentity) {
	s := newStaticIdentity(private, d.cfg.Now)
	d.mu.Lock()
	defer d.mu.Unlock()
	if p, ok := d.peers[s.public]; ok && !private.IsZero() {
		delete(d.peers, s.public)
		d.retirePeer(p)
		*removed = p
	}
	old = d.static.Swap(s)
	for _, p := range d.peers {
		ss, err := dh(&s.private, p.public[:])
		p.mu.Lock()
		// A peer of a low-order key gets the zero secret, as in AddPeer.
		if err != nil {
			clear(ss[:])
		}
		p.staticStatic = ss
		p.abandonInitiation()
		p.timers.lastHandshakeSent = time.Time{}
		p.mu.Unlock()
		clear(ss[:])
	}
	return old
}

// Indices returns the identity's index table, shared with the data plane (see IndexTable).
func (d *Identity) Indices() *IndexTable { return d.indices }

// SetUnderLoad switches cookie enforcement (paper section 5.4.7): while under load, handshake
// messages without a valid MAC2 are answered with a cookie reply instead of being processed, and
// those with one are rate limited per source address. The data plane sets it when its handshake
// queue backs up, as wireguard-go does.
func (d *Identity) SetUnderLoad(underLoad bool) { d.underLoad.Store(underLoad) }

// AddPeer adds the peer with static public key public and preshared key psk (zero for none).
func (d *Identity) AddPeer(public PublicKey, psk PresharedKey) (*PeerState, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	s := d.static.Load()
	if public == s.public {
		return nil, fmt.Errorf("%w: it is the device's own public key", ErrInvalidPeerKey)
	}
	if _, ok := d.peers[public]; ok {
		return nil, fmt.Errorf("%w: %v", ErrPeerExists, public)
	}
	// A public key of low order is kept, with a zero static-static secret, as the kernel's
	// noise.c and wireguard-go keep it (wg set accepts such a peer): every handshake with it then
	// fails, in createInitiation's DH and consumeInitiation's check of the secret.
	ss, err := dh(&s.private, public[:])
	if err != nil {
		clear(ss[:])
	}
	p := &PeerState{device: d, public: public, psk: psk, staticStatic: ss}
	clear(ss[:])
	p.cookies.init(&public)
	d.peers[public] = p
	return p, nil
}

// RemovePeer removes a peer, frees its indices and wipes its handshake secrets. The data plane
// destroys the peer's keypairs itself.
func (d *Identity) RemovePeer(public PublicKey) {
	d.mu.Lock()
	p, ok := d.peers[public]
	delete(d.peers, public)
	d.mu.Unlock()
	if ok {
		d.retirePeer(p)
	}
}

// retirePeer frees the indices and wipes the secrets of p, just taken out of the peer map.
func (d *Identity) retirePeer(p *PeerState) {
	d.indices.releasePeer(p)
	p.mu.Lock()
	p.removed = true
	p.abandonInitiation()
	clear(p.staticStatic[:])
	clear(p.psk[:])
	p.mu.Unlock()
}

// Peer returns the peer with static public key public, or nil.
func (d *Identity) Peer(public PublicKey) *PeerState {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return d.peers[public]
}

// Peers returns every peer, in no particular order.
func (d *Identity) Peers() []*PeerState {
	d.mu.RLock()
	defer d.mu.RUnlock()
	ps := make([]*PeerState, 0, len(d.peers))
	for _, p := range d.peers {
		ps = append(ps, p)
	}
	return ps
}

// NextDeadline returns the earliest timer deadline over all peers; ok is false when none is armed.
// A data plane sleeps until then (or until an event) and calls Tick on its peers.
func (d *Identity) NextDeadline() (next time.Time, ok bool) {
	for _, p := range d.Peers() {
		if t, armed := p.NextDeadline(); armed && (!ok || t.Before(next)) {
			next, ok = t, true
		}
	}
	return next, ok
}

// KeypairExpired reports whether kp must no longer send or receive at counter: it is older than
// REJECT_AFTER_TIME or counter reached REJECT_AFTER_MESSAGES (paper section 6.2). For receiving,
// counter is the message's counter; for sending, the next one to use.
func (d *Identity) KeypairExpired(kp *Keypair, counter uint64) bool {
	return counter >= d.cfg.RejectAfterMessages || d.cfg.Now().Sub(kp.Created) >= d.cfg.RejectAfterTime
}

// Keypair is the output of a completed handshake (paper section 5.4.5): the transport keys and the
// indices that name the session. It is a plain value for the data plane to install: it wraps the
// keys into kernels.Key objects, then calls Wipe. LocalIndex stays allocated in the Identity's
// IndexTable until the data plane Releases it when it retires the keypair.
//
// A responder's keypair (Initiator false) must not be used for sending until a transport message
// has been received under it (then call PeerState.KeypairConfirmed): until then the responder has no
// proof that the initiator holds the keys, and the initiator sends first.
type Keypair struct {
	Send        [KeySize]byte // ChaCha20-Poly1305 key for messages we send
	Receive     [KeySize]byte // ChaCha20-Poly1305 key for messages we receive
	LocalIndex  uint32        // receiver index of messages we receive under this keypair
	RemoteIndex uint32        // receiver index to put in messages we send under this keypair
	Initiator   bool          // whether we initiated the handshake that made it
	Created     time.Time     // for REKEY_AFTER_TIME and REJECT_AFTER_TIME
}

// Wipe zeroes the keys.
func (k *Keypair) Wipe() {
	clear(k.Send[:])
	clear(k.Receive[:])
}

// Result is what HandleMessage did with one handshake message.
type Result struct {
	Type protocol.MessageType
	// Peer is the peer the message came from: for an initiation or response, authenticated by the
	// handshake; for a cookie reply, the one whose message it answers. Nil whenever err is non-nil.
	Peer *PeerState
	// Reply is a message to send back to the source: the handshake response to an initiation, or,
	// under load, a cookie reply (returned together with ErrMAC2).
	Reply []byte
	// Keypair is the new session, or nil: from a consumed response (we initiated; usable at once)
	// or from an initiation we answered (we respond; send only after PeerState.KeypairConfirmed).
	Keypair *Keypair
}

// HandleMessage processes one handshake message (types 1, 2 or 3) received from src. It checks
// length and type, then MAC1 (always) and, under load, MAC2 and the per-source rate limit, before
// doing any Diffie-Hellman (paper section 5.3 and 5.4.7). Every rejection is a non-nil error
// wrapping one of the package's Err values; Reply may still be set then (the cookie reply of
// ErrMAC2) and must be sent to src. Transport messages (type 4) are the data plane's and rejected
// here with ErrMessageType.
func (d *Identity) HandleMessage(msg []byte, src netip.AddrPort) (Result, error) {
	res, err := d.screen(msg, src)
	if err != nil {
		return res, err
	}
	return d.consume(msg, src, res.Type)
}

// screen is HandleMessage's checks up to the first Diffie-Hellman: length, type, MAC1 and, under
// load, MAC2 (answered with a cookie reply) and the rate limit. It reads and writes no peer or
// handshake state, so any number of goroutines may screen at once while the messages that pass are
// consumed one at a time (ControlPlane). Cookie replies pass on their size: their AEAD is checked
// when consumed.
func (d *Identity) screen(msg []byte, src netip.AddrPort) (Result, error) {
	if len(msg) < 4 {
		return Result{}, fmt.Errorf("%w: %d bytes, shorter than the type field", ErrMessageSize, len(msg))
	}
	typ := messageType(msg)
	res := Result{Type: typ}
	var size, mac1 int
	switch typ {
	case protocol.TypeInitiation:
		size, mac1 = protocol.InitiationSize, initMAC1
	case protocol.TypeResponse:
		size, mac1 = protocol.ResponseSize, respMAC1
	case protocol.TypeCookieReply:
		if len(msg) != protocol.CookieReplySize {
			return res, fmt.Errorf("%w: cookie reply of %d bytes, want %d", ErrMessageSize, len(msg), protocol.CookieReplySize)
		}
		return res, nil
	default:
		return res, fmt.Errorf("%w: type field %#08x", ErrMessageType, uint32(typ))
	}
	if len(msg) != size {
		return res, fmt.Errorf("%w: type %d message of %d bytes, want %d", ErrMessageSize, typ, len(msg), size)
	}
	s := d.static.Load()
	if s.public == (PublicKey{}) { // no private key; screening never reads it (keyMu)
		return res, ErrNoPrivateKey
	}
	if !s.cookies.checkMAC1(msg, mac1) {
		return res, ErrMAC1
	}
	if d.underLoad.Load() {
		if !s.cookies.checkMAC2(msg, mac1+macSize, src) {
			res.Reply = s.cookies.createReply(msg, mac1, src)
			return res, ErrMAC2
		}
		if !d.limiter.allow(src.Addr()) {
			return res, fmt.Errorf("%w: source %v", ErrRateLimited, src.Addr())
		}
	}
	return res, nil
}

// consume processes a message of type typ that screen passed: it stores a cookie, or completes the
// initiator's or the responder's side of a handshake.
func (d *Identity) consume(msg []byte, src netip.AddrPort, typ protocol.MessageType) (Result, error) {
	res := Result{Type: typ}
	var err error
	switch typ {
	case protocol.TypeCookieReply:
		res.Peer, err = d.consumeCookieReply(msg)
	case protocol.TypeInitiation:
		res.Peer, res.Reply, res.Keypair, err = d.consumeInitiation(msg, src)
	default:
		res.Peer, res.Keypair, err = d.consumeResponse(msg, src)
	}
	return res, err
}

// consumeCookieReply stores the cookie of a cookie reply to our latest message to the peer its
// receiver index names. Per paper section 6.6, nothing is resent now: the retransmission timer
// resends the initiation, which then carries MAC2.
func (d *Identity) consumeCookieReply(msg []byte) (*PeerState, error) {
	receiver := binary.LittleEndian.Uint32(msg[cookieReceiver:])
	p, _, ok := d.indices.Lookup(receiver)
	if !ok {
		return nil, fmt.Errorf("%w: cookie reply to %#x", ErrUnknownIndex, receiver)
	}
	now := d.cfg.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.cookies.consumeReply(msg, now); err != nil {
		return nil, err
	}
	return p, nil
}
