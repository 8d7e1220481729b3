package dataplane

// tunCoalescer is tunWriter's receive offload for a TUN with virtio-net headers (vnetTUN): it
// coalesces the TCP segments and UDP datagrams of a batch that continue one another into super-
// packets, as the kernel's GRO would (net/ipv4/tcp_offload.c tcp_gro_receive: same flow, adjacent
// sequence numbers, same acknowledgment number, options and IP header fields, no segment after a
// shorter one or after PSH), and writes each with a virtio-net header that asks the kernel to take
// it as one (VIRTIO_NET_HDR_GSO_TCPV4/TCPV6/UDP_L4 with NEEDS_CSUM, virtio spec 5.1.6.2): one write
// system call and one pass through the kernel's stack per 64 KiB instead of per packet.
//
// Checksums are not verified: the packets passed AEAD authentication (see vnetTUN). A super-packet
// carries NEEDS_CSUM and the pseudo-header sum (tunoffload.Coalesced); a packet written alone goes as
// it is, with an empty header, and the kernel checks it as it checks any.
//
// Memory: the first packet of a super-packet is copied into one of groRooms fixed 64 KiB rooms and
// the others' payloads appended to it (pool buffers have no room to append to).
//
// Order: packets are written in the order of the first packet of each super-packet; what joins one
// overtakes the packets in between, which belong to other flows or are TCP segments the GRO leaves
// alone (pure ACKs), which TCP does not mind. A packet that may belong to a UDP flow but cannot be
// coalesced (an IPv4 fragment, ...) closes the UDP super-packets, so no datagram overtakes it.

import (
	"encoding/binary"

	"github.com/wirebatch/wirebatch/internal/tunoffload"
)

// vnetWriter writes one packet that starts with its virtio-net header.
type vnetWriter interface {
	write(pkt []byte) error
}

type tunCoalescer struct {
	w      vnetWriter
	udpGSO bool // the TUN takes UDP super-packets
	rooms  [groRooms][]byte
	in     [groRooms]groRoom
	n      int // rooms in use
	// order is the write order of the batch: i >= 0 is packet bufs[i] alone, -1-r is room r.
	order [MaxBatch]int
}

// groRoom is one super-packet being built.
type groRoom struct {
	pkt     []byte // the IP packet, in the room at tunOffset
	udp     bool
	iphl    int    // IP header length
	hl      int    // IP and transport header length
	seg     int    // payload length of the first packet: later ones may not be longer
	segs    int    // packets in it
	nextSeq uint32 // TCP: the sequence number the next segment must have
	closed  bool   // a shorter payload, PSH, or a packet of the flow that did not join ended it
}

func newTunCoalescer(w vnetWriter, udpGSO bool) *tunCoalescer {
	c := &tunCoalescer{w: w, udpGSO: udpGSO}
	for i := range c.rooms {
		c.rooms[i] = make([]byte, groRoomLen)
	}
	return c
}

// write coalesces and writes the packets bufs[i][tunOffset:] (at most MaxBatch) and returns the
// number of failed writes.
func (c *tunCoalescer) write(bufs [][]byte) (failed int) {
	k := 0
	for i := range bufs {
		pkt := bufs[i][tunOffset:]
		kind, payload := groKind(pkt)
		if kind == groUDP && !c.udpGSO {
			kind = groNone
		}
		switch kind {
		case groBarrier:
			for r := range c.in[:c.n] {
				c.in[r].closed = c.in[r].closed || c.in[r].udp
			}
		case groTCP, groUDP:
			r := c.last(pkt)
			if r != nil && c.join(r, pkt, payload) {
				continue
			}
			if r != nil {
				r.closed = true // a later packet of the flow must not join across this one
			}
			if c.n < groRooms {
				c.open(pkt, kind == groUDP, payload)
				c.order[k] = -1 - (c.n - 1)
				k++
				continue
			}
		}
		c.order[k] = i
		k++
	}
	for _, o := range c.order[:k] {
		var out []byte
		if o >= 0 {
			out = bufs[o][tunOffset-tunoffload.HeaderLen:]
			clear(out[:tunoffload.HeaderLen])
		} else {
			r := &c.in[-1-o]
			out = c.rooms[-1-o][tunOffset-tunoffload.HeaderLen : tunOffset+len(r.pkt)]
			var h tunoffload.Header
			if r.segs > 1 {
				h = tunoffload.Coalesced(r.pkt, r.iphl, r.hl-r.iphl, r.seg, r.udp)
			}
			h.Encode(out)
		}
		if c.w.write(out) != nil {
			failed++
		}
	}
	clear(c.in[:c.n])
	c.n = 0
	return failed
}

// open starts a super-packet with pkt, of groKind groTCP or groUDP with payload bytes of payload.
func (c *tunCoalescer) open(pkt []byte, udp bool, payload int) {
	room := c.rooms[c.n][tunOffset : tunOffset+len(pkt)]
	copy(room, pkt)
	iphl := 20
	if pkt[0]>>4 == 6 {
		iphl = 40
	}
	r := groRoom{pkt: room, udp: udp, iphl: iphl, hl: len(pkt) - payload, seg: payload, segs: 1}
	if !udp {
		r.nextSeq = binary.BigEndian.Uint32(pkt[iphl+4:]) + uint32(payload)
		r.closed = pkt[iphl+13]&tcpPSH != 0
	}
	c.in[c.n] = r
	c.n++
}

// join appends pkt's payload to r if the GRO would: see the top of the file.
func (c *tunCoalescer) join(r *groRoom, pkt []byte, payload int) bool {
	head := r.pkt
	if r.closed || payload > r.seg || len(head)+payload > groMaxLen || len(pkt)-payload != r.hl {
		return false
	}
	if pkt[0]>>4 == 4 {
		// Same TOS, DF (and reserved) bit, TTL.
		if pkt[1] != head[1] || pkt[6]>>5 != head[6]>>5 || pkt[8] != head[8] {
			return false
		}
	} else if pkt[0] != head[0] || pkt[1]>>4 != head[1]>>4 || pkt[7] != head[7] { // traffic class, hop limit
		return false
	}
	if !r.udp {
		th, hth := pkt[r.iphl:r.hl], head[r.iphl:r.hl]
		// Adjacent sequence numbers; the same acknowledgment number and options (the header
		// lengths are equal, as hl is).
		if binary.BigEndian.Uint32(th[4:]) != r.nextSeq || string(th[8:12]) != string(hth[8:12]) || string(th[20:]) != string(hth[20:]) {
			return false
		}
		r.nextSeq += uint32(payload)
		if th[13]&tcpPSH != 0 {
			hth[13] |= tcpPSH
			r.closed = true
		}
	}
	r.pkt = head[:len(head)+payload]
	copy(r.pkt[len(head):], pkt[len(pkt)-payload:])
	r.segs++
	r.closed = r.closed || payload < r.seg
	return true
}

// last returns the newest room of pkt's flow, or nil.
func (c *tunCoalescer) last(pkt []byte) *groRoom {
	for i := c.n - 1; i >= 0; i-- {
		if sameFlow(c.in[i].pkt, pkt) {
			return &c.in[i]
		}
	}
	return nil
}
