// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package tunoffload

import (
	"encoding/binary"
	"testing"
)

// TestClassify: the packets a GRO merges, those it leaves alone, and those it leaves alone that may
// belong to a UDP flow (barriers), each with the payload a coalescer appends.
func TestClassify(t *testing.T) {
	frag := func(p []byte, flagsOffset uint16) []byte {
		binary.BigEndian.PutUint16(p[6:], flagsOffset)
		return p
	}
	data := func(n int) []byte { return make([]byte, n) }
	udp4 := func(n int) []byte { return frag(ipPacket(4, ProtoUDP, 0, data(n), 0, 0), 0) }
	tcp := func(version, n int, flags byte) []byte { return ipPacket(version, ProtoTCP, 20, data(n), 1, flags) }
	options := udp4(100)
	options[0] = 0x46
	v6frag := ipPacket(6, ProtoUDP, 0, data(100), 0, 0)
	v6frag[6] = 44
	short := udp4(100)
	binary.BigEndian.PutUint16(short[2:], 50) // total length less than the packet
	icmp := udp4(100)
	icmp[9] = 1
	for _, c := range []struct {
		name    string
		pkt     []byte
		kind    GROClass
		payload int
	}{
		{"udp4", udp4(100), GROUDP, 100},
		{"udp6", ipPacket(6, ProtoUDP, 0, data(1000), 0, 0), GROUDP, 1000},
		{"udp4 first fragment", frag(udp4(1000), 0x2000), GROBarrier, 0},
		{"udp4 later fragment", frag(udp4(1000), 0x00b9), GROBarrier, 0},
		{"udp4 don't fragment", frag(udp4(1000), 0x4000), GROUDP, 1000},
		{"udp4 options", options, GROBarrier, 0},
		{"udp4 bad length", short, GROBarrier, 0},
		{"udp4 empty", udp4(0), GROBarrier, 0},
		{"udp6 fragment header", v6frag, GROBarrier, 0},
		{"tcp4 data", tcp(4, 1400, TCPFlagACK), GROTCP, 1400},
		{"tcp6 data push", tcp(6, 10, TCPFlagACK|TCPFlagPSH), GROTCP, 10},
		{"tcp4 options", ipPacket(4, ProtoTCP, 32, data(10), 1, TCPFlagACK), GROTCP, 10},
		{"tcp4 pure ack", tcp(4, 0, TCPFlagACK), GRONone, 0},
		{"tcp4 fin", tcp(4, 10, TCPFlagACK|tcpFIN), GRONone, 0},
		{"icmp", icmp, GRONone, 0},
		{"runt", []byte{0x45, 0}, GRONone, 0},
	} {
		kind, payload := Classify(c.pkt)
		if kind != c.kind || payload != c.payload {
			t.Errorf("%s: Classify = %d, %d; want %d, %d", c.name, kind, payload, c.kind, c.payload)
		}
	}
}

func TestTCPFlags(t *testing.T) {
	for _, version := range []int{4, 6} {
		for _, thl := range []int{20, 32} {
			p := ipPacket(version, ProtoTCP, thl, make([]byte, 10), 1, TCPFlagACK|TCPFlagPSH)
			if f := TCPFlags(p); f != TCPFlagACK|TCPFlagPSH {
				t.Errorf("v%d, %d-byte TCP header: flags %#x, want %#x", version, thl, f, TCPFlagACK|TCPFlagPSH)
			}
		}
	}
}
