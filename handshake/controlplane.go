// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package handshake

// The control plane of a dataplane.Device: this file joins a handshake Identity to the data path.
//
//	dataplane udpReader --> handshake queue --> HandleHandshake --> Identity.HandleMessage
//	                                                |--> dataplane.Device.InstallKeypair (new session)
//	                                                '--> dataplane.Device.SendHandshake (response, cookie reply)
//	dataplane stages --> PeerEvent --> PeerState.PacketSent / PacketReceived / KeypairConfirmed (timers, roaming)
//	                                   '--> "initiate" flag --.
//	timer goroutine (run) <-- wake ----------------------------'   sleeps until Identity.NextDeadline,
//	                                                               then PeerState.Tick: initiations, keepalives,
//	                                                               giving up, zeroing keys
//
// Ownership: HandleHandshake runs on the data plane's handshake goroutines, one per CPU: they screen
// messages (MAC1, cookie replies, rate limits) in parallel, take consumeMu for the rest, and share
// the load accounting under loadMu. PeerEvent runs on the stages' goroutines (it must not block, so
// it never does Diffie-Hellman: it raises a flag and wakes the timer goroutine, which makes the
// initiation); run is the only goroutine that sends initiations and keepalives on timers. The peer
// maps are written under mu by AddPeer and RemovePeer and read under its read lock by everyone else.

import (
	"errors"
	"math"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wirebatch/wirebatch/dataplane"
	"github.com/wirebatch/wirebatch/kernels"
	"github.com/wirebatch/wirebatch/protocol"
)

// Under-load detection for cookies (paper section 5.4.7). The data plane's handshake queue holds 1024
// messages; like wireguard-go we count ourselves under load once an eighth of that is waiting, or
// when the queue has overflowed, and stay so for a second after the last sign of it, so that a flood
// meets cookie replies instead of Diffie-Hellman computations.
const (
	underLoadQueueDepth = 1024 / 8
	underLoadHold       = time.Second
)

// ControlPlane implements dataplane.Handshaker with a handshake Identity: it completes handshakes,
// installs their keypairs in the data plane, and runs the timers of paper section 6 (initiation
// retransmits, rekeying, keepalives, giving up, zeroing keys) on a goroutine of its own.
//
// Pass it as dataplane.Config.Handshaker; NewDevice attaches it and starts the timer goroutine.
// Add peers with AddPeer (not with the AddPeer methods of the Identity or the dataplane Device). After closing the dataplane
// Device, call Close to stop the timer goroutine.
type ControlPlane struct {
	hs   *Identity
	logf func(format string, args ...any)

	// dp is Stored once by Attach and Loaded by every method: the pair publishes the Device.
	dp atomic.Pointer[dataplane.Device]

	mu   sync.RWMutex
	byHS map[*PeerState]*cpPeer
	byDP map[*dataplane.Peer]*cpPeer

	// wake has room for one token: a poke while the timer goroutine is busy is kept for its next
	// wait, and more pokes are redundant.
	wake     chan struct{}
	stop     chan struct{}
	done     chan struct{}
	stopOnce sync.Once

	// sleepUntil is the deadline (UnixNano of the handshake clock) the timer goroutine sleeps
	// until, math.MaxInt64 while it is awake or has nothing armed. PeerEvent pokes it when an event
	// arms an earlier deadline. The goroutine Stores MaxInt64 before reading the deadlines and the
	// new value after, so an event racing with the read sees either MaxInt64 (and pokes) or a value
	// computed after its own deadline was armed; sequentially consistent atomics order the two.
	sleepUntil atomic.Int64

	// consumeMu lets one handshake goroutine at a time past the screen (HandleHandshake).
	consumeMu sync.Mutex

	// Handshake queue accounting for SetUnderLoad, under loadMu (HandleHandshake runs on several
	// goroutines).
	loadMu         sync.Mutex
	handled        uint64
	lastDropped    uint64
	underLoadUntil time.Time

	installed atomic.Uint64 // keypairs installed; statistics only
	stats     controlCounters
}

// ControlStats count what the control plane did with the handshake messages the data plane handed
// it. With the data plane's DeviceStats.Handshakes (handed over) and HandshakesDropped (its queue
// was full), they account for every handshake message received: once the queue is drained,
// Accepted + CookieReplies + RateLimited + Rejected = Handshakes.
type ControlStats struct {
	Accepted      uint64 // authenticated initiations, responses and cookie replies
	CookieReplies uint64 // under load without a valid MAC2: answered with a cookie reply, no DH done
	RateLimited   uint64 // under load, past the source's (or its /64's) rate
	Rejected      uint64 // malformed, bad MAC1, undecryptable, unknown peer or index, replayed, too soon
}

type controlCounters struct {
	accepted, cookieReplies, rateLimited, rejected atomic.Uint64
}

// Stats returns the control plane's handshake message counters.
func (c *ControlPlane) Stats() ControlStats {
	return ControlStats{Accepted: c.stats.accepted.Load(), CookieReplies: c.stats.cookieReplies.Load(),
		RateLimited: c.stats.rateLimited.Load(), Rejected: c.stats.rejected.Load()}
}

// cpPeer is one peer as both Devices know it.
type cpPeer struct {
	hs *PeerState
	dp *dataplane.Peer
	// initiate is raised by PeerEvent (no keypair, rekey due) and consumed by the timer goroutine;
	// the Swap that consumes it pairs with the Store, and nothing else is published through it.
	initiate atomic.Bool
	// quietUntil (UnixNano of the handshake clock) is when an initiation we sent stops being
	// recent: until then CreateInitiation would refuse (REKEY_TIMEOUT), so PeerEvent does not wake
	// the timer goroutine for every batch that still finds no keypair or a keypair due for rekeying.
	// Written by the timer goroutine, read by PeerEvent; it guards no other memory.
	quietUntil atomic.Int64
	// awaiting is set when an initiation goes out and cleared when a handshake completes, so that
	// the next initiation while it is still set is a retry after a timeout. Written by the timer
	// goroutine (set) and the goroutines that complete handshakes (clear); it guards no other memory.
	awaiting atomic.Bool
	// Per-peer handshake counters (PeerHandshakes); statistics only.
	initiations, retries, givenUp atomic.Uint64
}

// PeerHandshakes counts one peer's handshake attempts as the initiator, for telling a peer that
// does not answer from one that is idle.
type PeerHandshakes struct {
	Initiations uint64 // initiations sent
	Retries     uint64 // initiations sent because the previous one got no answer within REKEY_TIMEOUT
	GivenUp     uint64 // series of initiations abandoned after REKEY_ATTEMPT_TIME (paper section 6.4)
}

// PeerHandshakes returns the handshake counters of the peer with public key pub; ok is false if
// there is no such peer.
func (c *ControlPlane) PeerHandshakes(pub PublicKey) (h PeerHandshakes, ok bool) {
	p := c.peerOfKey(pub)
	if p == nil {
		return h, false
	}
	return PeerHandshakes{Initiations: p.initiations.Load(), Retries: p.retries.Load(), GivenUp: p.givenUp.Load()}, true
}

func (c *ControlPlane) peerOfKey(pub PublicKey) *cpPeer {
	hp := c.hs.Peer(pub)
	if hp == nil {
		return nil
	}
	return c.peerOfHS(hp)
}

// ErrNoSuchPeer is returned for a public key that names no peer of the ControlPlane.
var ErrNoSuchPeer = errors.New("handshake: no such peer")

// SetEndpoint sets where the peer with public key pub is, in the handshake and the data plane
// (until an authenticated packet from elsewhere moves it: roaming).
func (c *ControlPlane) SetEndpoint(pub PublicKey, ep netip.AddrPort) error {
	p := c.peerOfKey(pub)
	if p == nil {
		return ErrNoSuchPeer
	}
	p.hs.SetEndpoint(ep)
	p.dp.SetEndpoint(ep)
	return nil
}

// SetPersistentKeepalive sets the persistent keepalive interval of the peer with public key pub
// (zero: off). Turning it on sends a keepalive at once, as AddPeer does.
func (c *ControlPlane) SetPersistentKeepalive(pub PublicKey, interval time.Duration) error {
	p := c.peerOfKey(pub)
	if p == nil {
		return ErrNoSuchPeer
	}
	p.hs.SetPersistentKeepalive(interval)
	c.poke()
	return nil
}

// SetPrivateKey changes the static private key at run time, as wg(8)'s private-key does on a live
// interface: the peer with the new public key, if any, is removed (from both Devices); every other
// peer's sessions are expired in the data plane, so that the next packet to it starts a handshake
// under the new identity, and no packet goes out under keys that the old identity agreed.
func (c *ControlPlane) SetPrivateKey(private PrivateKey) {
	if !private.IsZero() {
		c.RemovePeer(private.PublicKey())
	}
	c.hs.SetPrivateKey(private)
	for _, p := range c.peers() {
		p.dp.ExpireKeypairs()
		p.quietUntil.Store(0)
		p.awaiting.Store(false)
	}
	c.poke()
}

// NewControlPlane returns a control plane for dev. logf, if not nil, receives one line per handshake
// completed or answered, per handshake given up and per failed initiation send; it is called from
// the control plane's goroutines.
func NewControlPlane(dev *Identity, logf func(format string, args ...any)) *ControlPlane {
	if logf == nil {
		logf = func(string, ...any) {}
	}
	c := &ControlPlane{
		hs:   dev,
		logf: logf,
		byHS: map[*PeerState]*cpPeer{},
		byDP: map[*dataplane.Peer]*cpPeer{},
		wake: make(chan struct{}, 1),
		stop: make(chan struct{}),
		done: make(chan struct{}),
	}
	c.sleepUntil.Store(math.MaxInt64)
	return c
}

// Attach implements dataplane.Handshaker; it starts the timer goroutine. A ControlPlane serves one
// dataplane Device.
func (c *ControlPlane) Attach(d *dataplane.Device) {
	if !c.dp.CompareAndSwap(nil, d) {
		panic("handshake: ControlPlane attached to a second dataplane.Device")
	}
	go c.run()
}

// Close stops the timer goroutine and waits for it. Call it after closing the dataplane Device (so
// that no handshake message is still being handled). Keys stay installed; RemovePeer destroys them.
func (c *ControlPlane) Close() {
	c.stopOnce.Do(func() { close(c.stop) })
	if c.dp.Load() != nil {
		<-c.done
	}
}

// KeypairsInstalled returns how many keypairs (completed handshakes, as initiator or responder) the
// control plane has installed in the data plane.
func (c *ControlPlane) KeypairsInstalled() uint64 { return c.installed.Load() }

// PeerSettings describes a peer for ControlPlane.AddPeer (wg(8)'s peer settings).
type PeerSettings struct {
	PublicKey           PublicKey
	PresharedKey        PresharedKey   // zero: none
	Endpoint            netip.AddrPort // zero: unknown until the peer contacts us
	AllowedIPs          []netip.Prefix
	PersistentKeepalive time.Duration // zero: off
}

// ErrNotAttached is returned by AddPeer before the ControlPlane is attached to a dataplane Device.
var ErrNotAttached = errors.New("handshake: ControlPlane not attached to a dataplane.Device")

// AddPeer adds a peer to the handshake Identity and to the data plane, and returns the data plane's
// peer (for its counters and keypairs).
func (c *ControlPlane) AddPeer(pc PeerSettings) (*dataplane.Peer, error) {
	dp := c.dp.Load()
	if dp == nil {
		return nil, ErrNotAttached
	}
	hp, err := c.hs.AddPeer(pc.PublicKey, pc.PresharedKey)
	if err != nil {
		return nil, err
	}
	if pc.Endpoint.IsValid() {
		hp.SetEndpoint(pc.Endpoint)
	}
	p := &cpPeer{hs: hp}
	c.mu.Lock()
	p.dp = dp.AddPeer(dataplane.PeerConfig{PublicKey: pc.PublicKey, Endpoint: pc.Endpoint, AllowedIPs: pc.AllowedIPs})
	c.byHS[hp] = p
	c.byDP[p.dp] = p
	c.mu.Unlock()
	// A persistent keepalive is due at once (and arms a deadline the timer goroutine must see).
	hp.SetPersistentKeepalive(pc.PersistentKeepalive)
	c.poke()
	return p.dp, nil
}

// RemovePeer removes the peer with public key pub from both Devices, destroying its keypairs.
func (c *ControlPlane) RemovePeer(pub PublicKey) {
	c.mu.Lock()
	var p *cpPeer
	for hp, q := range c.byHS {
		if hp.PublicKey() == pub {
			p = q
			delete(c.byHS, hp)
			delete(c.byDP, q.dp)
		}
	}
	c.mu.Unlock()
	if p == nil {
		return
	}
	// The data plane first: retiring its keypairs releases their indices before the handshake
	// Device releases the rest, so no index is freed twice while another peer may reuse it.
	if dp := c.dp.Load(); dp != nil {
		dp.RemovePeer(p.dp)
	}
	c.hs.RemovePeer(pub)
}

func (c *ControlPlane) peerOfHS(hp *PeerState) *cpPeer {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.byHS[hp]
}

func (c *ControlPlane) peerOfDP(dp *dataplane.Peer) *cpPeer {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.byDP[dp]
}

func (c *ControlPlane) peers() []*cpPeer {
	c.mu.RLock()
	defer c.mu.RUnlock()
	ps := make([]*cpPeer, 0, len(c.byHS))
	for _, p := range c.byHS {
		ps = append(ps, p)
	}
	return ps
}

// HandleHandshake implements dataplane.Handshaker.
func (c *ControlPlane) HandleHandshake(msg []byte, src netip.AddrPort) {
	dp := c.dp.Load()
	c.updateLoad(dp)
	res, err := c.hs.screen(msg, src) // on every handshake goroutine at once: a flood's whole cost
	if err == nil {
		// Past the screen, one message at a time: installing a session, releasing an index and
		// the timers' key zeroing are ordered assuming a single handler; two handlers at once can
		// interleave them so that a local index is never released.
		c.consumeMu.Lock()
		defer c.consumeMu.Unlock()
		res, err = c.hs.consume(msg, src, res.Type)
	}
	if err != nil {
		switch {
		case res.Reply != nil:
			// The cookie reply of ErrMAC2 (paper section 5.4.7).
			c.stats.cookieReplies.Add(1)
			_ = dp.SendHandshake(src, res.Reply)
		case errors.Is(err, ErrRateLimited):
			c.stats.rateLimited.Add(1)
		default:
			c.stats.rejected.Add(1)
		}
		return // forged, stale, replayed or rate limited: dropped, as the paper's section 5.1 asks
	}
	c.stats.accepted.Add(1)
	p := c.peerOfHS(res.Peer)
	if p == nil {
		// The peer was removed while its message was handled.
		if res.Keypair != nil {
			res.Keypair.Wipe()
			c.hs.Indices().Release(res.Keypair.LocalIndex)
		}
		return
	}
	if res.Type == protocol.TypeInitiation || res.Type == protocol.TypeResponse {
		// The message authenticated the peer: its endpoint follows (roaming, paper section 2.1).
		// HandleMessage moved the PeerState's endpoint already.
		p.dp.SetEndpoint(src)
		p.dp.CountHandshake(len(msg), false)
	}
	if res.Keypair != nil {
		// Installed before the response goes out: the initiator sends under the new keypair as
		// soon as the response arrives, and a message under an index not yet installed would
		// be dropped.
		c.install(dp, p, res.Keypair)
	}
	if res.Reply != nil {
		// Send errors are the network's loss: the initiator retransmits after REKEY_TIMEOUT.
		if dp.SendHandshake(src, res.Reply) == nil {
			p.dp.CountHandshake(len(res.Reply), true)
		}
	}
}

// updateLoad turns cookie enforcement on or off from the depth of the data plane's handshake queue:
// messages it queued (DeviceStats.Handshakes) minus those handled here. The data plane counts a
// message just after queueing it, so the count may still lag behind the messages handled.
func (c *ControlPlane) updateLoad(dp *dataplane.Device) {
	c.loadMu.Lock()
	defer c.loadMu.Unlock()
	c.handled++
	st := dp.Stats()
	now := c.hs.cfg.Now()
	if st.Handshakes >= c.handled+underLoadQueueDepth || st.HandshakesDropped != c.lastDropped {
		c.underLoadUntil = now.Add(underLoadHold)
	}
	c.lastDropped = st.HandshakesDropped
	c.hs.SetUnderLoad(now.Before(c.underLoadUntil))
}

// install hands a new session to the data plane and wipes the handshake's copy of its keys.
func (c *ControlPlane) install(dp *dataplane.Device, p *cpPeer, kp *Keypair) {
	_, err := dp.InstallKeypair(p.dp, dataplane.KeypairConfig{
		Suite:       kernels.ChaCha20Poly1305, // paper section 5.4.6: the transport AEAD
		SendKey:     kp.Send[:],
		ReceiveKey:  kp.Receive[:],
		LocalIndex:  kp.LocalIndex,
		RemoteIndex: kp.RemoteIndex,
		Initiator:   kp.Initiator,
		Created:     kp.Created,
	})
	kp.Wipe()
	if err != nil {
		// The data plane did not take it (the peer is being removed), so it will never report
		// it retired: free its index here.
		c.hs.Indices().Release(kp.LocalIndex)
		return
	}
	c.installed.Add(1)
	p.awaiting.Store(false)
	if !kp.Initiator {
		c.logf("handshake with peer %v answered (responder; sending once the initiator's first message confirms it)", p.hs.PublicKey())
		return
	}
	c.logf("handshake with peer %v completed (initiator)", p.hs.PublicKey())
	// The responder may send under the new keypair only once a transport message under it proves
	// we hold it (paper section 5.4.5). InstallKeypair has sent the packets staged for the peer,
	// if any; a keepalive proves it in any case, rather than whenever data next goes out.
	_ = dp.SendKeepalive(p.dp)
}

// PeerEvent implements dataplane.Handshaker: it feeds the data path's events to the timers. It
// runs on the stages' goroutines and does not block.
func (c *ControlPlane) PeerEvent(dpp *dataplane.Peer, ev dataplane.Event) {
	p := c.peerOfDP(dpp)
	if p == nil {
		return
	}
	hp := p.hs
	if ev&(dataplane.EventDataSent|dataplane.EventKeepaliveSent) != 0 {
		hp.PacketSent(ev&dataplane.EventDataSent != 0)
	}
	received := ev&(dataplane.EventDataReceived|dataplane.EventKeepaliveReceived) != 0
	if received {
		// The data plane has already moved its endpoint to the message's source; the PeerState
		// follows, so initiations go where the peer is now (roaming, paper section 2.1).
		hp.PacketReceived(dpp.Endpoint(), ev&dataplane.EventDataReceived != 0)
	}
	if ev&dataplane.EventKeypairConfirmed != 0 {
		hp.KeypairConfirmed()
		c.logf("handshake with peer %v completed (responder)", hp.PublicKey())
	}
	initiate := ev&(dataplane.EventNoKeypair|dataplane.EventRekeyNeeded) != 0
	if kp := dpp.Current(); kp != nil && !initiate {
		// The data plane's own rekey checks use the paper's constants; these use Limits'
		// limits (paper section 6.2), which tests shorten.
		hkp := Keypair{Initiator: kp.Initiator(), Created: kp.Created()}
		initiate = (ev&dataplane.EventDataSent != 0 && hp.RekeyDueOnSend(&hkp, kp.SendCounter())) ||
			(received && hp.RekeyDueOnReceive(&hkp))
	}
	if initiate && c.hs.cfg.Now().UnixNano() >= p.quietUntil.Load() {
		if !p.initiate.Swap(true) {
			c.poke()
		}
		return
	}
	if next, ok := hp.NextDeadline(); ok && next.UnixNano() < c.sleepUntil.Load() {
		c.poke()
	}
}

// KeypairRetired implements dataplane.Handshaker: the keypair's local index may be reused.
func (c *ControlPlane) KeypairRetired(kp *dataplane.Keypair) {
	c.hs.Indices().Release(kp.LocalIndex())
}

func (c *ControlPlane) poke() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// run is the timer goroutine: it sleeps until the next deadline or a poke, then serves every peer.
func (c *ControlPlane) run() {
	defer close(c.done)
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		c.sleepUntil.Store(math.MaxInt64)
		next, armed := c.hs.NextDeadline()
		var expired <-chan time.Time
		if armed {
			c.sleepUntil.Store(next.UnixNano())
			timer.Reset(next.Sub(c.hs.cfg.Now()))
			expired = timer.C
		}
		select {
		case <-c.stop:
			return
		case <-c.wake:
		case <-expired:
		}
		c.sleepUntil.Store(math.MaxInt64)
		for _, p := range c.peers() {
			c.serve(p)
		}
	}
}

// serve acts on one peer's due timers and pending requests (paper section 6).
func (c *ControlPlane) serve(p *cpPeer) {
	dp := c.dp.Load()
	a := p.hs.Tick()
	if p.initiate.Swap(false) || a&ActionSendInitiation != 0 {
		c.initiate(dp, p)
	}
	if a&ActionSendKeepalive != 0 {
		if err := dp.SendKeepalive(p.dp); errors.Is(err, dataplane.ErrNotSent) {
			c.initiate(dp, p) // no usable keypair: a handshake instead (Action's contract)
		}
	}
	if a&ActionGiveUp != 0 {
		dp.DropStaged(p.dp) // paper section 6.4: the packets waiting for the handshake go
		p.givenUp.Add(1)
		p.awaiting.Store(false)
		c.logf("handshake with peer %v did not complete within REKEY_ATTEMPT_TIME; giving up until there is traffic for it", p.hs.PublicKey())
	}
	if a&ActionZeroKeys != 0 {
		// Paper section 6.3: no new session for 3 × REJECT_AFTER_TIME; the old keys are erased
		// (retiring wipes them once no batch uses them) and their indices released.
		p.dp.ExpireKeypairs()
	}
}

// initiate sends a handshake initiation to the peer's endpoint, unless one went out less than
// REKEY_TIMEOUT ago (CreateInitiation refuses then) or the endpoint is unknown.
func (c *ControlPlane) initiate(dp *dataplane.Device, p *cpPeer) {
	ep := p.hs.Endpoint()
	if !ep.IsValid() {
		return
	}
	now := c.hs.cfg.Now()
	msg, err := c.hs.CreateInitiation(p.hs)
	if err != nil {
		return
	}
	p.quietUntil.Store(now.Add(c.hs.cfg.RekeyTimeout).UnixNano())
	p.initiations.Add(1)
	if p.awaiting.Swap(true) {
		p.retries.Add(1)
		c.logf("handshake with peer %v did not complete within REKEY_TIMEOUT; retrying", p.hs.PublicKey())
	}
	if err := dp.SendHandshake(ep, msg); err != nil {
		// Retransmitted after REKEY_TIMEOUT; logged, since an unreachable endpoint is worth knowing.
		c.logf("sending a handshake initiation to peer %v at %v: %v", p.hs.PublicKey(), ep, err)
	} else {
		p.dp.CountHandshake(len(msg), true)
	}
}
