// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package dataplane

// The decrypt stage: received transport data messages become IP packets, a whole batch per call.
//
// One Decrypter belongs to one worker goroutine and owns its scratch, so a steady-state batch
// allocates nothing. Decrypt makes four passes:
//
//  1. parse each datagram's header, look its receiver index up in the PeerSet's index table
//     (lock-free; once per run of equal indices), take a batch reference on the keypair, check the
//     keypair's age and the counter's limit, and build an Op that opens the message in place.
//  2. ONE kernels.Open call for the whole batch.
//  3. for each message that authenticated, in batch order, the RFC 6479 replay check under the
//     keypair's mutex (taken once per run of the same keypair); only authenticated counters may move
//     the window (WireGuard paper, section 5.4.6).
//  4. strip the padding using the inner IPv4/IPv6 header's length and check that the inner source
//     address routes back to the peer that sent it (cryptokey routing, section 3); then, once per
//     keypair, confirm a responder's next keypair, follow a roaming endpoint, count and report.

import (
	"encoding/binary"
	"net/netip"
	"time"

	"github.com/wirebatch/wirebatch/batch"
	"github.com/wirebatch/wirebatch/kernels"
	"github.com/wirebatch/wirebatch/protocol"
)

// Decrypter runs the decrypt stage for one goroutine at a time.
type Decrypter struct {
	set *PeerSet

	ops     [batch.MaxPackets]kernels.Op
	nonces  [batch.MaxPackets][12]byte
	op      [batch.MaxPackets]uint8 // the op of each packet with a tentative VerdictOK
	counter [batch.MaxPackets]uint64
	group   [batch.MaxPackets]uint8
	groups  [batch.MaxPackets]recvGroup
	ng      int
	total   tally
}

// recvGroup is one keypair's share of a batch.
type recvGroup struct {
	index   uint32
	kp      *Keypair // with a batch reference, or nil (unknown index)
	verdict Verdict
	authed  bool // at least one message authenticated and passed the replay check
	events  Event
	tally   tally
}

// NewDecrypter returns a decrypt stage over s.
func NewDecrypter(s *PeerSet) *Decrypter { return &Decrypter{set: s} }

// Decrypt opens every transport message of p in place, setting Verdicts[i] and Peers[i]. Addrs, when
// not nil, holds the datagrams' sources and lets the peer roam (EventEndpointChanged).
//
// For VerdictOK, the IP packet is Bufs[i][Offset+protocol.TransportHeaderSize:][:Sizes[i]], padding removed; Sizes[i]
// is 0 for a keepalive. For other verdicts, Sizes[i] and the buffer (never holding unauthenticated
// plaintext) are unspecified, and the packet must be dropped. Any input, of any length and content,
// gets a verdict; nothing panics.
func (d *Decrypter) Decrypt(p Packets) {
	for i := 0; i < len(p.Bufs); i += batch.MaxPackets {
		d.decrypt(p.sub(i, min(i+batch.MaxPackets, len(p.Bufs))))
	}
}

func (d *Decrypter) decrypt(p Packets) {
	now := time.Now()
	d.ng = 0

	// Pass 1: parse and build ops.
	m := 0
	for i, buf := range p.Bufs {
		p.Peers[i] = nil
		size := p.Sizes[i]
		if size < Overhead || p.Offset < 0 || p.Offset > len(buf) || size > len(buf)-p.Offset ||
			binary.LittleEndian.Uint32(buf[p.Offset:]) != protocol.TypeTransport {
			p.Verdicts[i] = VerdictMalformed
			d.total.drops[VerdictMalformed]++
			continue
		}
		msg := buf[p.Offset : p.Offset+size]
		gi := d.groupOf(headerReceiver(msg), now)
		g := &d.groups[gi]
		if g.kp == nil {
			p.Verdicts[i] = g.verdict
			d.total.drops[g.verdict]++
			continue
		}
		p.Peers[i] = g.kp.peer
		ctr := headerCounter(msg)
		v := g.verdict
		if v == VerdictOK && ctr >= protocol.RejectAfterMessages {
			v = VerdictKeyExpired
		}
		p.Verdicts[i] = v
		if v != VerdictOK {
			g.tally.drops[v]++
			d.total.drops[v]++
			continue
		}
		putNonce(&d.nonces[m], ctr)
		setOp(&d.ops[m], g.kp.recv, d.nonces[m][:], msg[protocol.TransportHeaderSize:],
			msg[protocol.TransportHeaderSize:size-kernels.TagSize])
		d.op[i] = uint8(m)
		d.counter[i] = ctr
		d.group[i] = uint8(gi)
		m++
	}

	// Pass 2: one kernels call for the whole batch.
	if kernels.Open(d.ops[:m]) != 0 {
		for i := range p.Bufs {
			if p.Verdicts[i] == VerdictOK && d.ops[d.op[i]].Err != nil {
				p.Verdicts[i] = VerdictAuthFailed
				d.groups[d.group[i]].tally.drops[VerdictAuthFailed]++
				d.total.drops[VerdictAuthFailed]++
			}
		}
	}
	clear(d.ops[:m]) // drop the references to keys and buffers until the next batch

	// Pass 3: replay check, one lock per run of the same keypair.
	var locked *Keypair
	for i := range p.Bufs {
		if p.Verdicts[i] != VerdictOK {
			continue
		}
		g := &d.groups[d.group[i]]
		if g.kp != locked {
			if locked != nil {
				locked.replayMu.Unlock()
			}
			locked = g.kp
			locked.replayMu.Lock()
		}
		newest := d.counter[i] >= locked.replay.highest // checked before Check moves it
		if !locked.replay.Check(d.counter[i]) {
			p.Verdicts[i] = VerdictReplay
			g.tally.drops[VerdictReplay]++
			d.total.drops[VerdictReplay]++
			continue
		}
		g.authed = true
		if newest && p.Addrs != nil {
			g.events |= roam(locked, p.Addrs[i])
		}
	}
	if locked != nil {
		locked.replayMu.Unlock()
	}

	// Pass 4: inner packet checks.
	routes := &d.set.routes
	for i, buf := range p.Bufs {
		if p.Verdicts[i] != VerdictOK {
			continue
		}
		g := &d.groups[d.group[i]]
		wire := p.Sizes[i]
		pt := buf[p.Offset+protocol.TransportHeaderSize : p.Offset+wire-kernels.TagSize]
		size, v := innerPacket(pt, routes, g.kp.peer)
		p.Verdicts[i] = v
		if v != VerdictOK {
			g.tally.drops[v]++
			d.total.drops[v]++
			continue
		}
		p.Sizes[i] = size
		if size == 0 {
			g.events |= EventKeepaliveReceived
		} else {
			g.events |= EventDataReceived
		}
		g.tally.packets++
		g.tally.bytes += uint64(wire)
		d.total.packets++
		d.total.bytes += uint64(wire)
	}

	for gi := range d.groups[:d.ng] {
		g := &d.groups[gi]
		if kp := g.kp; kp != nil {
			peer := kp.peer
			if g.authed {
				d.authenticated(g, now)
			}
			g.tally.flush(&peer.stats, false)
			d.set.event(peer, g.events)
			kp.release()
		}
		*g = recvGroup{}
	}
	d.total.flush(&d.set.stats, false)
}

// authenticated applies what an authenticated, fresh message on g's keypair implies (roaming is
// decided earlier, under the replay lock: roam).
func (d *Decrypter) authenticated(g *recvGroup, now time.Time) {
	kp, peer := g.kp, g.kp.peer
	// The initiator's first message on the responder's next keypair confirms it (section 5.4.5).
	if peer.next.Load() == kp && peer.confirm(kp) {
		g.events |= EventKeypairConfirmed
	}
	// An initiator still receiving on an old keypair asks for a new handshake before it expires
	// (section 6.2).
	if kp.initiator && now.Sub(kp.created) >= rekeyOnReceiveAge && peer.current.Load() == kp {
		g.events |= EventRekeyNeeded
	}
}

// roam moves kp's peer to src, the source of an authenticated message of kp whose counter is the
// highest kp has accepted, and reports EventEndpointChanged if it moved (section 2.1: the endpoint
// follows the most recent authenticated source). It runs under kp.replayMu, which orders the
// decrypt workers' checks of kp: a worker that finishes an older batch from a previous address
// after a newer batch was checked finds no newest counter in it and leaves the endpoint alone.
// Messages of a keypair the peer has replaced (its previous one) never move it.
func roam(kp *Keypair, src netip.AddrPort) Event {
	peer := kp.peer
	if !src.IsValid() || peer.previous.Load() == kp {
		return 0
	}
	src = netip.AddrPortFrom(src.Addr().Unmap(), src.Port())
	if ep := peer.endpoint.Load(); ep != nil && *ep == src {
		return 0
	}
	moved := src // only a real move allocates
	peer.endpoint.Store(&moved)
	return EventEndpointChanged
}

// groupOf returns the index of the group of receiver index idx, creating it on its first message.
func (d *Decrypter) groupOf(idx uint32, now time.Time) int {
	if d.ng > 0 && d.groups[d.ng-1].index == idx {
		return d.ng - 1
	}
	for gi := range d.groups[:d.ng] {
		if d.groups[gi].index == idx {
			return gi
		}
	}
	gi := d.ng
	d.ng++
	g := &d.groups[gi]
	g.index = idx
	g.verdict = VerdictNoKey
	if kp := d.set.index.lookup(idx); kp != nil && kp.tryAcquire() {
		g.kp = kp
		g.verdict = VerdictOK
		if kp.expired(now) {
			g.verdict = VerdictKeyExpired
		}
	}
	return gi
}

// innerPacket checks a decrypted payload: empty (a keepalive), or an IPv4 or IPv6 packet whose header
// length fits the payload (the rest is padding) and whose source address routes to peer. It returns
// the packet's length without padding.
func innerPacket(pt []byte, routes *AllowedIPs, peer *Peer) (int, Verdict) {
	if len(pt) == 0 {
		return 0, VerdictOK
	}
	var n int
	var src *Peer
	switch pt[0] >> 4 {
	case 4:
		if len(pt) < 20 {
			return 0, VerdictMalformed
		}
		n = int(binary.BigEndian.Uint16(pt[2:4]))
		if n < 20 || n > len(pt) {
			return 0, VerdictMalformed
		}
		src = routes.lookup4(pt[12:16])
	case 6:
		if len(pt) < 40 {
			return 0, VerdictMalformed
		}
		n = 40 + int(binary.BigEndian.Uint16(pt[4:6]))
		if n > len(pt) {
			return 0, VerdictMalformed
		}
		src = routes.lookup6(pt[8:24])
	default:
		return 0, VerdictMalformed
	}
	if src != peer {
		return 0, VerdictBadSource
	}
	return n, VerdictOK
}
