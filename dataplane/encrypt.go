// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package dataplane

// The encrypt stage: IP packets from the TUN become transport data messages (WireGuard paper,
// section 5.4.6), a whole batch per call.
//
// One Encrypter belongs to one worker goroutine and owns its scratch (the kernels.Op array, nonces,
// per-peer groups), so a steady-state batch allocates nothing. Encrypt makes three passes:
//
//  1. classify: read each packet's destination from its IPv4/IPv6 header, route it through the
//     allowed-IPs trie (lock-free) and group it by peer. The first packet of a peer in the batch
//     loads the peer's endpoint and current keypair (atomic loads), takes a batch reference on the
//     keypair and checks its age.
//  2. reserve and build: one atomic Add per peer group reserves a run of counters for all its
//     packets; each packet gets its 16-byte header written into the headroom, its zero padding
//     into the tailroom and an Op sealing the padded packet in place, tag in the tailroom.
//  3. seal with ONE kernels.Seal call, then flush counters and events once per peer and drop the
//     batch's keypair references.
//
// The batch's buffers are owned by the caller throughout; the PeerSet is shared with other workers
// and the control plane, and read here only through atomics and immutable snapshots.

import (
	"net/netip"
	"time"

	"github.com/wirebatch/wirebatch/batch"
	"github.com/wirebatch/wirebatch/kernels"
	"github.com/wirebatch/wirebatch/protocol"
)

// Encrypter runs the encrypt stage for one goroutine at a time.
type Encrypter struct {
	set *PeerSet
	mtu int

	ops    [batch.MaxPackets]kernels.Op
	nonces [batch.MaxPackets][12]byte
	groups [batch.MaxPackets]sendGroup
	ng     int
	group  [batch.MaxPackets]uint8 // the group of each packet with a tentative VerdictOK
	total  tally                   // the set-wide counts of this batch

	// hold, set by a Device for its control sends, keeps events in held instead of reporting
	// them, so that they can be reported after the Device's lock is released.
	hold bool
	held []heldEvent
}

type heldEvent struct {
	peer *Peer
	ev   Event
}

// sendGroup is one peer's share of a batch.
type sendGroup struct {
	peer     *Peer
	kp       *Keypair // with a batch reference, or nil
	verdict  Verdict  // VerdictOK, or why none of the peer's packets can be sent
	endpoint netip.AddrPort
	n        int    // packets to seal
	next     uint64 // next counter of the reserved run
	events   Event
	tally    tally
}

// NewEncrypter returns an encrypt stage over s. Plaintexts are padded up to mtu at most (section
// 5.4.6); mtu <= 0 pads without a limit.
func NewEncrypter(s *PeerSet, mtu int) *Encrypter {
	return &Encrypter{set: s, mtu: mtu}
}

// Encrypt turns every packet of p into a transport message in place, setting Verdicts[i] and
// Peers[i] (and Addrs[i], the peer's endpoint, when Addrs is not nil). A packet of size 0 is a
// keepalive for the peer in Peers[i]; any other packet is an IPv4 or IPv6 packet routed by its
// destination address.
//
// Room: p.Offset must leave protocol.TransportHeaderSize bytes of headroom, and len(Bufs[i]) must hold the padded packet
// and the tag after Offset; otherwise the packet is VerdictMalformed. For VerdictOK, the message is
// Bufs[i][Offset-protocol.TransportHeaderSize:][:Sizes[i]]; for other verdicts the packet and Sizes[i] are left as they
// were (a Device stages packets of VerdictNoKey and VerdictKeyExpired for after the handshake).
// Counters and events are updated once per peer.
func (e *Encrypter) Encrypt(p Packets) {
	for i := 0; i < len(p.Bufs); i += batch.MaxPackets {
		e.encrypt(p.sub(i, min(i+batch.MaxPackets, len(p.Bufs))))
	}
}

func (e *Encrypter) encrypt(p Packets) {
	now := time.Now()
	e.ng = 0
	routes := &e.set.routes
	headroom := p.Offset >= protocol.TransportHeaderSize

	// Pass 1: classify and group.
	for i, buf := range p.Bufs {
		size := p.Sizes[i]
		var peer *Peer
		v := VerdictMalformed
		switch {
		case !headroom || size < 0 || size > len(buf)-p.Offset:
		case size == 0:
			if peer = p.Peers[i]; peer != nil {
				v = VerdictOK
			}
		default:
			pkt := buf[p.Offset : p.Offset+size]
			switch pkt[0] >> 4 {
			case 4:
				if size >= 20 {
					peer, v = routes.lookup4(pkt[16:20]), VerdictNoRoute
				}
			case 6:
				if size >= 40 {
					peer, v = routes.lookup6(pkt[24:40]), VerdictNoRoute
				}
			}
			if peer != nil {
				v = VerdictOK
			}
		}
		p.Peers[i] = peer
		if v != VerdictOK {
			p.Verdicts[i] = v
			e.total.drops[v]++
			continue
		}
		gi := e.groupOf(peer, now)
		g := &e.groups[gi]
		if g.verdict == VerdictOK && p.Offset+paddedLen(size, e.mtu)+kernels.TagSize > len(buf) {
			v = VerdictMalformed
		} else {
			v = g.verdict
		}
		p.Verdicts[i] = v
		if v != VerdictOK {
			g.tally.drops[v]++
			e.total.drops[v]++
			continue
		}
		e.group[i] = uint8(gi)
		g.n++
	}

	// Pass 2: reserve a run of counters per peer, then build the headers and ops.
	for gi := range e.groups[:e.ng] {
		g := &e.groups[gi]
		if g.n == 0 {
			continue
		}
		kp := g.kp
		// One Add per peer per batch. The check in groupOf saw the counter below
		// protocol.RejectAfterMessages; between that Load and this Add each other worker can add at most
		// batch.MaxPackets, and the 2^13 counters between protocol.RejectAfterMessages and 2^64 absorb up to 64
		// such workers (Device caps its workers below that), so the run never wraps.
		end := kp.sendCounter.Add(uint64(g.n))
		g.next = end - uint64(g.n)
		if end > protocol.RejectAfterMessages || end < uint64(g.n) {
			g.verdict = VerdictKeyExpired
			g.events |= EventNoKeypair | EventRekeyNeeded
			continue
		}
		if end >= protocol.RekeyAfterMessages || (kp.initiator && now.Sub(kp.created) >= protocol.RekeyAfterTime) {
			g.events |= EventRekeyNeeded
		}
	}
	m := 0
	for i, buf := range p.Bufs {
		if p.Verdicts[i] != VerdictOK {
			continue
		}
		g := &e.groups[e.group[i]]
		if g.verdict != VerdictOK {
			p.Verdicts[i] = g.verdict
			g.tally.drops[g.verdict]++
			e.total.drops[g.verdict]++
			continue
		}
		size := p.Sizes[i]
		padded := paddedLen(size, e.mtu)
		ctr := g.next
		g.next++
		putHeader(buf[p.Offset-protocol.TransportHeaderSize:p.Offset], g.kp.remoteIndex, ctr)
		clear(buf[p.Offset+size : p.Offset+padded])
		putNonce(&e.nonces[m], ctr)
		setOp(&e.ops[m], g.kp.send, e.nonces[m][:], buf[p.Offset:p.Offset+padded],
			buf[p.Offset:p.Offset+padded+kernels.TagSize])
		m++
		n := protocol.TransportHeaderSize + padded + kernels.TagSize
		p.Sizes[i] = n
		if p.Addrs != nil {
			p.Addrs[i] = g.endpoint
		}
		if size == 0 {
			g.events |= EventKeepaliveSent
		} else {
			g.events |= EventDataSent
		}
		g.tally.packets++
		g.tally.bytes += uint64(n)
		e.total.packets++
		e.total.bytes += uint64(n)
	}

	// Pass 3: one kernels call for the whole batch.
	kernels.Seal(e.ops[:m])
	clear(e.ops[:m]) // drop the references to keys and buffers until the next batch

	for gi := range e.groups[:e.ng] {
		g := &e.groups[gi]
		g.tally.flush(&g.peer.stats, true)
		if e.hold && g.events != 0 {
			e.held = append(e.held, heldEvent{g.peer, g.events})
		} else {
			e.set.event(g.peer, g.events)
		}
		if g.kp != nil {
			g.kp.release()
		}
		*g = sendGroup{}
	}
	e.total.flush(&e.set.stats, true)
}

// groupOf returns the index of peer's group in this batch, creating it on the peer's first packet.
// The scan is linear: a batch rarely spans more than a few peers, and the last group is tried first.
func (e *Encrypter) groupOf(peer *Peer, now time.Time) int {
	if e.ng > 0 && e.groups[e.ng-1].peer == peer {
		return e.ng - 1
	}
	for gi := range e.groups[:e.ng] {
		if e.groups[gi].peer == peer {
			return gi
		}
	}
	gi := e.ng
	e.ng++
	g := &e.groups[gi]
	g.peer = peer
	ep := peer.endpoint.Load()
	if ep == nil {
		g.verdict = VerdictNoRoute
		return gi
	}
	g.endpoint = *ep
	// The current keypair may be retired between this Load and tryAcquire; then the reload sees
	// its successor (or nil), because retiring unlinks before releasing.
	for {
		kp := peer.current.Load()
		if kp == nil {
			g.verdict = VerdictNoKey
			g.events |= EventNoKeypair
			return gi
		}
		if kp.tryAcquire() {
			g.kp = kp
			break
		}
	}
	if g.kp.expired(now) || g.kp.sendCounter.Load() >= protocol.RejectAfterMessages {
		g.verdict = VerdictKeyExpired
		g.events |= EventNoKeypair | EventRekeyNeeded
	}
	return gi
}
