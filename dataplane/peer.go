// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package dataplane

import (
	"errors"
	"net/netip"
	"sync"
	"sync/atomic"
)

// Event is a set of things that happened to a peer during one batch, reported to the PeerSet's
// Observer once per peer per batch: the inputs WireGuard's timers need (WireGuard paper, section
// 6) without a call per packet.
type Event uint16

const (
	EventDataSent          Event = 1 << iota // a data message (non-empty payload) was sealed for the peer
	EventKeepaliveSent                       // a keepalive (empty payload) was sealed for the peer
	EventDataReceived                        // an authenticated, non-replayed data message arrived
	EventKeepaliveReceived                   // an authenticated, non-replayed keepalive arrived
	EventEndpointChanged                     // an authenticated message came from a new source address (roaming, section 2.1); Peer.Endpoint is updated
	EventKeypairConfirmed                    // the responder's next keypair became current (first message on it from the initiator)
	EventRekeyNeeded                         // the current keypair passed protocol.RekeyAfterMessages or protocol.RekeyAfterTime (section 6.2): start a handshake
	EventNoKeypair                           // an outbound packet found no usable keypair and was dropped: start a handshake
)

// Observer is told what the data path does that a control plane must know. Both methods are called
// from the stages' and the control plane's goroutines and must not block.
type Observer interface {
	// PeerEvent reports what happened to p during one batch, once per peer per batch.
	PeerEvent(p *Peer, ev Event)
	// KeypairRetired reports that kp has left its peer's slots and the index table: its local
	// index may be reused (the handshake's index allocator can release it). It is called with
	// the peer's keypair lock held, so it must not call back into the PeerSet for that peer.
	KeypairRetired(kp *Keypair)
}

// Stats are packet counters. Packets count transport messages; bytes count them whole (header,
// padding and tag) and, as wireguard-go and the kernel count them for wg show's transfer line, the
// handshake initiations and responses the control plane reports (Peer.CountHandshake).
type Stats struct {
	TxPackets, TxBytes uint64
	RxPackets, RxBytes uint64
	Drops              [NumVerdicts]uint64 // by verdict; Drops[VerdictOK] stays 0
	// TxErrors counts sealed datagrams the socket refused (an unreachable or prohibited
	// destination: EACCES, ENETUNREACH, EHOSTUNREACH); they are among TxPackets, which counts what
	// was sealed for sending.
	TxErrors uint64
}

// Dropped returns the total of all drops.
func (s Stats) Dropped() uint64 {
	var n uint64
	for _, d := range s.Drops {
		n += d
	}
	return n
}

// counters are the atomic form of Stats. Stages accumulate a batch locally and add each non-zero
// count once per batch; the adds are statistics only and order nothing else.
type counters struct {
	txPackets, txBytes atomic.Uint64
	rxPackets, rxBytes atomic.Uint64
	drops              [NumVerdicts]atomic.Uint64
	txErrors           atomic.Uint64
}

func (c *counters) load() Stats {
	s := Stats{
		TxPackets: c.txPackets.Load(), TxBytes: c.txBytes.Load(),
		RxPackets: c.rxPackets.Load(), RxBytes: c.rxBytes.Load(),
		TxErrors: c.txErrors.Load(),
	}
	for i := range c.drops {
		s.Drops[i] = c.drops[i].Load()
	}
	return s
}

// tally is a batch's worth of counts, kept by a stage and added to counters in one flush.
type tally struct {
	packets, bytes uint64
	drops          [NumVerdicts]uint32
}

func (t *tally) flush(c *counters, tx bool) {
	if t.packets != 0 {
		if tx {
			c.txPackets.Add(t.packets)
			c.txBytes.Add(t.bytes)
		} else {
			c.rxPackets.Add(t.packets)
			c.rxBytes.Add(t.bytes)
		}
	}
	for v, n := range t.drops {
		if n != 0 {
			c.drops[v].Add(uint64(n))
		}
	}
	*t = tally{}
}

// PeerConfig describes a peer to add.
type PeerConfig struct {
	// PublicKey identifies the peer to the control plane; the data path does not use it.
	PublicKey [32]byte
	// Endpoint is where messages to the peer go until an authenticated message arrives from
	// elsewhere (roaming). The zero value means unknown: packets routed to the peer are dropped
	// with VerdictNoRoute until it is set.
	Endpoint netip.AddrPort
	// AllowedIPs are the prefixes the peer may send from and that route to it (section 3).
	AllowedIPs []netip.Prefix
}

// Peer is a remote peer: its endpoint, its keypair slots and its counters.
type Peer struct {
	set       *PeerSet
	publicKey [32]byte

	// endpoint is replaced as a whole (Store of a fresh pointer) when the peer roams or is
	// configured; the encrypt stage Loads it once per batch. The pointee is never modified.
	endpoint atomic.Pointer[netip.AddrPort]

	// mu serialises changes of the keypair slots. The stages read the slots with atomic Loads,
	// which pair with the Stores made under mu: a stage that loads a keypair sees it initialised.
	mu                      sync.Mutex
	current, previous, next atomic.Pointer[Keypair]
	removed                 bool // under set.mu

	stats  counters
	staged waitQueue // used by a Device only
}

// PublicKey returns the key the peer was configured with.
func (p *Peer) PublicKey() [32]byte { return p.publicKey }

// Endpoint returns the peer's current endpoint (the zero AddrPort if unknown).
func (p *Peer) Endpoint() netip.AddrPort {
	if e := p.endpoint.Load(); e != nil {
		return *e
	}
	return netip.AddrPort{}
}

// SetEndpoint sets where messages to the peer go.
func (p *Peer) SetEndpoint(e netip.AddrPort) {
	e = netip.AddrPortFrom(e.Addr().Unmap(), e.Port())
	p.endpoint.Store(&e)
}

// Stats returns the peer's counters.
func (p *Peer) Stats() Stats { return p.stats.load() }

// CountHandshake adds a handshake initiation or response of n bytes, sent to the peer or received
// from it, to its byte counters: the control plane builds and checks those messages, the data
// plane keeps the counts.
func (p *Peer) CountHandshake(n int, sent bool) {
	if sent {
		p.stats.txBytes.Add(uint64(n))
	} else {
		p.stats.rxBytes.Add(uint64(n))
	}
}

// Current returns the keypair the peer sends with, or nil.
func (p *Peer) Current() *Keypair { return p.current.Load() }

// Previous returns the keypair replaced by the current one, still accepted on receive, or nil.
func (p *Peer) Previous() *Keypair { return p.previous.Load() }

// Next returns the responder's unconfirmed keypair, or nil (see InstallKeypair).
func (p *Peer) Next() *Keypair { return p.next.Load() }

// PeerSet is the state the stages share: peers, the allowed-IPs table, the index table of installed
// keypairs and the set-wide counters. All methods are safe for concurrent use; the stages read it
// without locks.
type PeerSet struct {
	mu     sync.Mutex // serialises adding and removing peers
	peers  map[*Peer]struct{}
	routes AllowedIPs
	index  indexTable
	obs    Observer // fixed at construction; nil means nobody listens
	stats  counters // every packet of every stage, attributed to a peer or not
}

// NewPeerSet returns an empty set that reports to o (nil for nobody).
func NewPeerSet(o Observer) *PeerSet {
	return &PeerSet{peers: map[*Peer]struct{}{}, obs: o}
}

func (s *PeerSet) event(p *Peer, ev Event) {
	if ev != 0 && s.obs != nil {
		s.obs.PeerEvent(p, ev)
	}
}

// ErrPeerRemoved is returned when installing a keypair for a peer no longer in its set.
var ErrPeerRemoved = errors.New("dataplane: peer has been removed")

// AddPeer adds a peer with its endpoint and allowed IPs. Prefixes already owned by another peer move
// to the new one, as in WireGuard.
func (s *PeerSet) AddPeer(c PeerConfig) *Peer {
	p := &Peer{set: s, publicKey: c.PublicKey}
	if c.Endpoint.IsValid() {
		p.SetEndpoint(c.Endpoint)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.peers[p] = struct{}{}
	for _, pr := range c.AllowedIPs {
		s.routes.Insert(pr, p)
	}
	return p
}

// RemovePeer removes p's allowed IPs, retires its keypairs and forgets it. Packets of p already in a
// stage finish normally; later ones find no route and no keypair.
func (s *PeerSet) RemovePeer(p *Peer) {
	s.mu.Lock()
	if _, ok := s.peers[p]; !ok {
		s.mu.Unlock()
		return
	}
	delete(s.peers, p)
	p.removed = true
	s.routes.RemovePeer(p)
	s.mu.Unlock()
	p.ExpireKeypairs()
}

// Peers returns the peers of the set, in no particular order.
func (s *PeerSet) Peers() []*Peer {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*Peer, 0, len(s.peers))
	for p := range s.peers {
		out = append(out, p)
	}
	return out
}

// AllowedIPs returns the set's routing table, for inspection and for changing a peer's prefixes
// (AllowedIPs.Insert, Remove and RemovePeer).
func (s *PeerSet) AllowedIPs() *AllowedIPs { return &s.routes }

// Stats returns the set-wide counters: every packet any stage handled, including drops that no peer
// can be charged with (no route, unknown index, malformed).
func (s *PeerSet) Stats() Stats { return s.stats.load() }

// InstallKeypair installs a new session for p, as WireGuard does when a handshake completes (WireGuard
// paper, section 5.4.5, and wireguard-go's slot rules):
//
//   - as initiator, the new keypair becomes current at once (the initiator has seen the response,
//     so the responder holds the same keys); the old current (or an unconfirmed next, which is
//     newer) becomes previous; everything older is retired.
//   - as responder, the new keypair goes to next: the responder must not send with it before the
//     initiator has proved it holds it, which the first authenticated data message on it does (the
//     decrypt stage then makes it current; EventKeypairConfirmed). The old next and previous are
//     retired; current keeps sending meanwhile.
//
// It fails if the local index is already installed, the keys do not fit the suite, or p was removed.
func (s *PeerSet) InstallKeypair(p *Peer, c KeypairConfig) (*Keypair, error) {
	kp, err := newKeypair(p, c)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if p.removed || p.set != s {
		kp.release()
		return nil, ErrPeerRemoved
	}
	if !s.index.add(kp) {
		kp.release()
		return nil, errors.New("dataplane: local index already installed")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if c.Initiator {
		old := []*Keypair{p.previous.Load()}
		if next := p.next.Load(); next != nil {
			p.previous.Store(next)
			old = append(old, p.current.Load())
			p.next.Store(nil)
		} else {
			p.previous.Store(p.current.Load())
		}
		p.current.Store(kp)
		for _, o := range old {
			s.retire(o)
		}
	} else {
		oldNext, oldPrev := p.next.Load(), p.previous.Load()
		p.next.Store(kp)
		p.previous.Store(nil)
		s.retire(oldNext)
		s.retire(oldPrev)
	}
	return kp, nil
}

// ExpireKeypairs retires all of p's keypairs (for instance when the control plane gives up on a
// handshake, or the peer is removed): packets to p then get VerdictNoKey.
func (p *Peer) ExpireKeypairs() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, slot := range []*atomic.Pointer[Keypair]{&p.current, &p.previous, &p.next} {
		p.set.retire(slot.Swap(nil))
	}
}

// confirm makes kp, the responder's next keypair, current: the initiator has used it. Called by the
// decrypt stage after a message on kp authenticated and passed the replay check.
func (p *Peer) confirm(kp *Keypair) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.next.Load() != kp {
		return false // another worker was first, or a newer handshake replaced it
	}
	old := p.previous.Load()
	p.previous.Store(p.current.Load())
	p.current.Store(kp)
	p.next.Store(nil)
	p.set.retire(old)
	return true
}

// retire unlinks kp from the index table and drops the set's reference (see keypair.go). The caller
// has already removed it from its peer's slots. nil is ignored.
func (s *PeerSet) retire(kp *Keypair) {
	if kp == nil {
		return
	}
	s.index.remove(kp)
	if s.obs != nil {
		s.obs.KeypairRetired(kp)
	}
	kp.release()
}
