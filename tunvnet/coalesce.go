// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package tunvnet

// Writing: the coalescer is a TUN's receive offload. It coalesces the TCP segments and UDP
// datagrams of a batch that continue one another into super-packets, as the kernel's GRO would
// (net/ipv4/af_inet.c inet_gro_receive and tcp_offload.c tcp_gro_receive: same flow, adjacent
// sequence numbers, consecutive IPv4 identifications (or one fixed identification, for atomic
// datagrams), the same acknowledgment number, window, options and IP header fields, valid
// checksums, no segment after a shorter one or after PSH; which packets it considers at all is
// tunoffload.Classify), and writes each with a virtio-net header that asks the kernel to take it
// as one (VIRTIO_NET_HDR_GSO_TCPV4/TCPV6/UDP_L4 with NEEDS_CSUM, virtio spec 5.1.6.2): one write
// system call and one pass through the kernel's stack per 64 KiB instead of per packet. Segmenting
// a super-packet again (tunoffload.Split, or the kernel's GSO if it forwards it) gives back its
// packets byte for byte, except that atomic IPv4 datagrams sent with one fixed identification (as
// Linux sends those of unconnected sockets) get consecutive ones: the field means nothing in them
// (RFC 6864 section 4.1), and the virtio-net header cannot ask for fixed ones.
//
// Checksums: a super-packet carries NEEDS_CSUM and the pseudo-header sum (tunoffload.Coalesced),
// which the kernel takes as verified (CHECKSUM_PARTIAL), so a packet joins one only if its IPv4
// header checksum and its TCP or UDP checksum are the ones its bytes give. A tunnel's AEAD
// authentication proves only that the peer sent the packet; the checksum is TCP's and UDP's
// end-to-end check, which also covers the sending host between its stack and its tunnel
// (wireguard-go's GRO verifies it too; kernel WireGuard instead marks decrypted packets
// CHECKSUM_UNNECESSARY, drivers/net/wireguard/receive.c). A packet that fails goes alone, with an
// empty header, and the kernel drops and counts it as it does any (TcpInCsumErrors,
// UdpInCsumErrors).
//
// Nothing is copied in user space: a super-packet is the first packet, its headers edited in place
// in its buffer and the virtio-net header in the headroom before it, followed by the payloads of
// the others where they are, gathered by one writev.
//
// Order: packets are written in the order of the first packet of each super-packet; what joins one
// overtakes the packets in between, which belong to other flows or are TCP segments the GRO leaves
// alone (pure ACKs), which TCP does not mind. A packet that may belong to a UDP flow but cannot be
// coalesced (an IPv4 fragment, ...) closes the UDP super-packets, so no datagram overtakes it.

import (
	"cmp"
	"encoding/binary"

	"github.com/wirebatch/wirebatch/internal/sysio"
	"github.com/wirebatch/wirebatch/internal/tunoffload"
)

// batchSize is the most packets one write of the coalescer takes, and BatchSize: what
// golang.zx2c4.com/wireguard/tun reports for a TUN with offloads too.
const batchSize = sysio.MaxBatch

// gatherWriter writes one packet gathered from iov (at most batchSize slices, none empty), whose
// first slice starts with the virtio-net header: a TUN takes one packet per write.
type gatherWriter interface {
	writev(iov [][]byte) error
}

// coalescer is the state of a TUN's writes, used by one Write at a time.
type coalescer struct {
	w      gatherWriter
	udpGSO bool // the TUN takes UDP super-packets
	// groups are the packets written, in write order: a packet alone, or a super-packet.
	groups [batchSize]groGroup
	n      int
	// next links the packets of a super-packet: next[i] is the index of the packet whose payload
	// follows packet i's, or -1.
	next [batchSize]int
	iov  [batchSize][]byte
}

// groGroup is one packet, or a super-packet being built.
type groGroup struct {
	first, last int    // indexes in the batch of its first and last packet
	pkt         []byte // the first packet (its headers are the super-packet's)
	length      int    // the super-packet's length
	gro         bool   // a TCP or UDP packet others may join
	udp         bool
	iphl        int    // IP header length
	hl          int    // IP and transport header length
	seg         int    // payload length of the first packet: later ones may not be longer
	segs        int    // packets in it
	nextSeq     uint32 // TCP: the sequence number the next segment must have
	verified    bool   // the first packet's checksums are valid (checked when a second would join)
	fixedID     bool   // IPv4 atomic datagrams that all carry the first one's identification
	closed      bool   // a shorter payload, PSH, or a packet of the flow that did not join ended it
}

// write coalesces and writes the packets bufs[i][offset:] (at most batchSize; offset at least
// tunoffload.HeaderLen, the headroom for the virtio-net header). It edits the packets' headers. It
// returns the number of failed writes and of packets written, and the first error.
func (c *coalescer) write(bufs [][]byte, offset int) (failed, written int, err error) {
	for i := range bufs {
		pkt := bufs[i][offset:]
		c.next[i] = -1
		kind, payload := tunoffload.Classify(pkt)
		switch {
		case kind == tunoffload.GROUDP && !c.udpGSO:
			kind = tunoffload.GRONone
		case kind == tunoffload.GROUDP && int(binary.BigEndian.Uint16(pkt[len(pkt)-payload-4:])) != payload+8:
			// A UDP length that disagrees with the IP length: joined, the bytes it leaves out
			// would become payload. Written alone, it is the kernel's to judge; nothing of its
			// flow may overtake it.
			kind = tunoffload.GROBarrier
		}
		switch kind {
		case tunoffload.GROBarrier:
			for g := range c.groups[:c.n] {
				c.groups[g].closed = c.groups[g].closed || c.groups[g].udp
			}
		case tunoffload.GROTCP, tunoffload.GROUDP:
			g := c.last(pkt)
			if g != nil && c.join(g, pkt, payload) {
				c.next[g.last] = i
				g.last = i
				continue
			}
			if g != nil {
				g.closed = true // a later packet of the flow must not join across this one
			}
			c.open(i, pkt, kind == tunoffload.GROUDP, payload)
			continue
		}
		c.groups[c.n] = groGroup{first: i, last: i, pkt: pkt, length: len(pkt), segs: 1}
		c.n++
	}
	for gi := range c.groups[:c.n] {
		g := &c.groups[gi]
		var h tunoffload.Header
		if g.segs > 1 {
			h = tunoffload.Coalesced(g.pkt, g.length, g.iphl, g.hl-g.iphl, g.seg, g.udp)
		}
		first := bufs[g.first][offset-tunoffload.HeaderLen : offset+len(g.pkt)]
		h.Encode(first)
		c.iov[0] = first
		k := 1
		for i := c.next[g.first]; i >= 0; i = c.next[i] {
			c.iov[k] = bufs[i][offset+g.hl:]
			k++
		}
		if werr := c.w.writev(c.iov[:k]); werr != nil {
			failed++
			err = cmp.Or(err, werr)
		} else {
			written += g.segs
		}
		clear(c.iov[:k])
	}
	clear(c.groups[:c.n])
	c.n = 0
	return failed, written, err
}

// open starts a group with packet i, pkt, of class GROTCP or GROUDP with payload bytes of payload.
func (c *coalescer) open(i int, pkt []byte, udp bool, payload int) {
	iphl := 20
	if pkt[0]>>4 == 6 {
		iphl = 40
	}
	g := groGroup{first: i, last: i, pkt: pkt, length: len(pkt), gro: true, udp: udp,
		iphl: iphl, hl: len(pkt) - payload, seg: payload, segs: 1}
	if !udp {
		g.nextSeq = binary.BigEndian.Uint32(pkt[iphl+4:]) + uint32(payload)
		g.closed = pkt[iphl+13]&tunoffload.TCPFlagPSH != 0
	}
	c.groups[c.n] = g
	c.n++
}

// join adds pkt to g if the GRO would: see the top of the file.
func (c *coalescer) join(g *groGroup, pkt []byte, payload int) bool {
	head := g.pkt
	if g.closed || payload > g.seg || g.length+payload > 65535 || len(pkt)-payload != g.hl {
		return false
	}
	fixedID := false
	if pkt[0]>>4 == 4 {
		// Same TOS, DF (and reserved) bit, TTL; the next identification, which segmentation
		// gives each segment, or, in atomic datagrams (DF set: Classify takes no fragments), the
		// first one's throughout, as the kernel's GRO allows.
		if pkt[1] != head[1] || pkt[6]>>5 != head[6]>>5 || pkt[8] != head[8] {
			return false
		}
		id, first := binary.BigEndian.Uint16(pkt[4:]), binary.BigEndian.Uint16(head[4:])
		fixedID = id == first && head[6]&0x40 != 0 && (g.segs == 1 || g.fixedID)
		if !fixedID && (id != first+uint16(g.segs) || g.fixedID) {
			return false
		}
	} else if string(pkt[:4]) != string(head[:4]) || pkt[7] != head[7] { // traffic class, flow label, hop limit
		return false
	}
	if !g.udp {
		th, hth := pkt[g.iphl:g.hl], head[g.iphl:g.hl]
		// Adjacent sequence numbers; the same acknowledgment number, data offset, window, urgent
		// pointer and options (the header lengths are equal, as hl is). The flags are ACK, and
		// PSH on the last segment only (Classify, closed).
		if binary.BigEndian.Uint32(th[4:]) != g.nextSeq || string(th[8:13]) != string(hth[8:13]) ||
			string(th[14:16]) != string(hth[14:16]) || string(th[18:]) != string(hth[18:]) {
			return false
		}
	}
	if !checksumsValid(pkt, g.iphl, g.udp) {
		return false
	}
	if !g.verified {
		if !checksumsValid(head, g.iphl, g.udp) {
			return false
		}
		g.verified = true
	}
	if !g.udp {
		g.nextSeq += uint32(payload)
		if pkt[g.iphl+13]&tunoffload.TCPFlagPSH != 0 {
			head[g.iphl+13] |= tunoffload.TCPFlagPSH
			g.closed = true
		}
	}
	g.fixedID = fixedID
	g.length += payload
	g.segs++
	g.closed = g.closed || payload < g.seg
	return true
}

// checksumsValid reports whether the IPv4 header checksum of pkt (if IPv4) and its TCP or UDP
// checksum are exactly the ones its bytes give (RFC 1071 section 4.1; RFC 9293 section 3.1, RFC 768):
// then segmenting a super-packet writes them back unchanged. A zero UDP checksum (none, over IPv4;
// invalid over IPv6) does not count: segmentation would fill it in.
//
// Each check is the receiver's (RFC 1071 section 4.1): the sum over the bytes, checksum field
// included, is all ones. That takes one pass over the packet, where recomputing the field would take
// two around it. The check also lets through the one other representation of the value a sender
// computes, which segmentation would not write back: all ones where the sender computes zero (UDP
// sends a computed zero as all ones, so for UDP all ones is the one it computes). A TCP checksum or
// IPv4 header checksum of all ones is therefore refused: a sender computes it only for a sum of
// zero, and the pseudo-header's protocol and the IPv4 version make neither sum zero.
func checksumsValid(pkt []byte, iphl int, udp bool) bool {
	if iphl == 20 && (tunoffload.Fold(tunoffload.IPv4HeaderSum(pkt)) != 0xffff ||
		binary.BigEndian.Uint16(pkt[10:]) == 0xffff) {
		return false
	}
	proto, at := byte(tunoffload.ProtoTCP), iphl+16
	if udp {
		proto, at = tunoffload.ProtoUDP, iphl+6
	}
	field := binary.BigEndian.Uint16(pkt[at:])
	if udp && field == 0 || !udp && field == 0xffff {
		return false
	}
	return tunoffload.Fold(tunoffload.Sum(pkt[iphl:], tunoffload.PseudoSum(pkt, proto, len(pkt)-iphl))) == 0xffff
}

// last returns the newest group of pkt's flow that packets may join, or nil.
func (c *coalescer) last(pkt []byte) *groGroup {
	for i := c.n - 1; i >= 0; i-- {
		if c.groups[i].gro && tunoffload.SameFlow(c.groups[i].pkt, pkt) {
			return &c.groups[i]
		}
	}
	return nil
}
