// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package dataplane

import (
	"encoding/binary"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/wirebatch/wirebatch/kernels"
	"github.com/wirebatch/wirebatch/protocol"
)

var (
	addrA4, addrB4 = netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.0.2")
	addrA6, addrB6 = netip.MustParseAddr("fd00::1"), netip.MustParseAddr("fd00::2")
	endA, endB     = netip.MustParseAddrPort("192.0.2.1:51820"), netip.MustParseAddrPort("192.0.2.2:51820")
	keyAB          = bytesOf(0x11, 32) // A sends, B receives
	keyBA          = bytesOf(0x22, 32)
)

func bytesOf(b byte, n int) []byte {
	s := make([]byte, n)
	for i := range s {
		s[i] = b + byte(i)
	}
	return s
}

// eventLog records the events a PeerSet reports.
type eventLog struct {
	mu      sync.Mutex
	evs     map[*Peer]Event
	retired []uint32 // local indices, in retirement order
}

func (l *eventLog) KeypairRetired(kp *Keypair) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.retired = append(l.retired, kp.LocalIndex())
}

func (l *eventLog) PeerEvent(p *Peer, ev Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.evs == nil {
		l.evs = map[*Peer]Event{}
	}
	l.evs[p] |= ev
}

// take returns and forgets the events reported for p.
func (l *eventLog) take(p *Peer) Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	ev := l.evs[p]
	delete(l.evs, p)
	return ev
}

// end is one side of a test tunnel: its PeerSet, the other side as its peer, and its stages.
type end struct {
	set  *PeerSet
	peer *Peer
	kp   *Keypair
	enc  *Encrypter
	dec  *Decrypter
	log  *eventLog
}

// newPair returns two ends that share a session: A initiated (its keypair is current), B responded
// (its keypair waits in next until A's first message confirms it).
func newPair(tb testing.TB, suite kernels.Suite) (a, b *end) {
	tb.Helper()
	mk := func(self4, self6, other4, other6 netip.Addr, ep netip.AddrPort) *end {
		e := &end{log: &eventLog{}}
		e.set = NewPeerSet(e.log)
		e.peer = e.set.AddPeer(PeerConfig{
			Endpoint:   ep,
			AllowedIPs: []netip.Prefix{netip.PrefixFrom(other4, 32), netip.PrefixFrom(other6, 128)},
		})
		e.enc = NewEncrypter(e.set, 1420)
		e.dec = NewDecrypter(e.set)
		return e
	}
	a = mk(addrA4, addrA6, addrB4, addrB6, endB)
	b = mk(addrB4, addrB6, addrA4, addrA6, endA)
	ks := suite.KeySize()
	var err error
	a.kp, err = a.set.InstallKeypair(a.peer, KeypairConfig{Suite: suite, SendKey: keyAB[:ks], ReceiveKey: keyBA[:ks], LocalIndex: 1, RemoteIndex: 2, Initiator: true})
	if err != nil {
		tb.Fatal(err)
	}
	b.kp, err = b.set.InstallKeypair(b.peer, KeypairConfig{Suite: suite, SendKey: keyBA[:ks], ReceiveKey: keyAB[:ks], LocalIndex: 2, RemoteIndex: 1})
	if err != nil {
		tb.Fatal(err)
	}
	return a, b
}

// ipPacket returns an IPv4 or IPv6 packet (by the family of src) of total length n (at least the
// header), with a payload pattern derived from seed.
func ipPacket(src, dst netip.Addr, n int, seed byte) []byte {
	if src.Is4() {
		n = max(n, 20)
		p := make([]byte, n)
		p[0] = 0x45
		binary.BigEndian.PutUint16(p[2:4], uint16(n))
		p[8], p[9] = 64, 17
		s, d := src.As4(), dst.As4()
		copy(p[12:16], s[:])
		copy(p[16:20], d[:])
		for i := 20; i < n; i++ {
			p[i] = seed + byte(i)
		}
		return p
	}
	n = max(n, 40)
	p := make([]byte, n)
	p[0] = 0x60
	binary.BigEndian.PutUint16(p[4:6], uint16(n-40))
	p[6], p[7] = 17, 64
	s, d := src.As16(), dst.As16()
	copy(p[8:24], s[:])
	copy(p[24:40], d[:])
	for i := 40; i < n; i++ {
		p[i] = seed + byte(i)
	}
	return p
}

const (
	testOffset  = 32
	testBufSize = 2048
)

// newPackets returns a batch of n buffers of testBufSize bytes with all per-packet slices.
func newPackets(n int) Packets {
	p := Packets{
		Bufs: make([][]byte, n), Sizes: make([]int, n), Offset: testOffset,
		Addrs: make([]netip.AddrPort, n), Peers: make([]*Peer, n), Verdicts: make([]Verdict, n),
	}
	for i := range p.Bufs {
		p.Bufs[i] = make([]byte, testBufSize)
	}
	return p
}

// load puts pkts into p at p.Offset and trims the batch to len(pkts).
func load(p Packets, pkts [][]byte) Packets {
	p = p.sub(0, len(pkts))
	for i, pk := range pkts {
		p.Sizes[i] = copy(p.Bufs[i][p.Offset:], pk)
	}
	return p
}

// transfer copies every sealed message (VerdictOK) of out into in as a received datagram from src
// and returns the received batch and, for each of its packets, the index in out it came from.
func transfer(out, in Packets, src netip.AddrPort) (Packets, []int) {
	var from []int
	k := 0
	for i := range out.Bufs {
		if out.Verdicts[i] != VerdictOK {
			continue
		}
		msg := out.Bufs[i][out.Offset-protocol.TransportHeaderSize:][:out.Sizes[i]]
		in.Sizes[k] = copy(in.Bufs[k][in.Offset:], msg)
		in.Addrs[k] = src
		from = append(from, i)
		k++
	}
	return in.sub(0, k), from
}

// ages a keypair config's creation time into the past.
func agedBy(d time.Duration) time.Time { return time.Now().Add(-d) }

func secs(n int) time.Duration { return time.Duration(n) * time.Second }
