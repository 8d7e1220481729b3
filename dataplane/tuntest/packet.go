// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package tuntest

import "encoding/binary"

// Packet builds an IP packet (version 4 or 6; 10.0.0.1 to 10.0.0.2, or ::1 to ::2) of protocol
// proto from port sport to port 9, with payload zero bytes of TCP or UDP payload behind a TCP
// header of 20 bytes carrying tcpFlags (proto 6) or a UDP header (any other proto). Its lengths are
// set, its checksums left zero: the packets the tests of TUN writers classify and coalesce.
func Packet(version int, proto byte, sport uint16, payload int, tcpFlags byte) []byte {
	iph := 20
	if version == 6 {
		iph = 40
	}
	l4 := 8
	if proto == 6 {
		l4 = 20
	}
	p := make([]byte, iph+l4+payload)
	if version == 4 {
		p[0] = 0x45
		binary.BigEndian.PutUint16(p[2:], uint16(len(p)))
		p[9] = proto
		copy(p[12:], []byte{10, 0, 0, 1, 10, 0, 0, 2})
	} else {
		p[0] = 0x60
		binary.BigEndian.PutUint16(p[4:], uint16(len(p)-40))
		p[6] = proto
		p[23], p[39] = 1, 2
	}
	binary.BigEndian.PutUint16(p[iph:], sport)
	binary.BigEndian.PutUint16(p[iph+2:], 9)
	if proto == 6 {
		p[iph+12] = 5 << 4
		p[iph+13] = tcpFlags
	}
	return p
}
