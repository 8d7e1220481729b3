// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package netnstests

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// wantClean checks a loadgen report of a run over a clean path: every datagram arrived once and
// intact.
func wantClean(t *testing.T, r loadgenReport) {
	t.Helper()
	if r.Sent == 0 || r.Received != r.Sent || r.Lost != 0 || r.Duplicates != 0 || r.Corrupt != 0 || r.Stray != 0 {
		t.Errorf("loadgen %+v: want every datagram delivered once and intact", r)
	}
}

// wantNoDrops checks that a tunnel dropped nothing it received.
func wantNoDrops(t *testing.T, e *end, c counters) {
	t.Helper()
	if c.Dropped != (counters{}).Dropped {
		t.Errorf("%v dropped packets on a clean path: %+v", e, c.Dropped)
	}
}

// TestE2EDelivery sends paced loadgen traffic through the tunnel: payloads from 64 bytes to the
// largest that fits the tunnel MTU, and IMIX (whose 1500-byte packets the kernel fragments to fit
// the 1420-byte tunnel), one way and back. Nothing may be lost, duplicated or corrupted, and the
// tunnels' counters must account for every packet without a drop.
func TestE2EDelivery(t *testing.T) {
	checkLeaks(t)
	impl := underTest(t)
	tp := newTopo(t, topoConfig{A: impl, B: impl})
	tp.start()
	loadRecv(t, tp.A)
	loadRecv(t, tp.B)
	t.Logf("first packet through after %v", reach(t, tp.A, tp.B, 10*time.Second))
	beforeA, _ := tp.A.snapshot()
	beforeB, _ := tp.B.snapshot()

	// 1392 = 1420 - 20 (IPv4) - 8 (UDP): the largest payload of an unfragmented inner packet.
	sizes := loadSend(t, tp.A, tp.B, "-rate", "5000", "-size", "64,65,128,500,576,1000,1391,1392", "-duration", "2s")
	wantClean(t, sizes)
	imix := loadSend(t, tp.A, tp.B, "-rate", "5000", "-size", "imix", "-duration", "1s", "-flows", "4")
	wantClean(t, imix)
	back := loadSend(t, tp.B, tp.A, "-rate", "5000", "-size", "64,1392", "-duration", "1s")
	wantClean(t, back)
	// One flow of unfragmented packets over one peer's session leaves the tunnel in the order it
	// entered (as in wireguard-go, whose queues keep each peer's packets in order).
	if sizes.Reordered != 0 || back.Reordered != 0 {
		t.Errorf("reordered: %d from A, %d from B; want none", sizes.Reordered, back.Reordered)
	}

	afterA, ok := tp.A.stop()
	afterB, _ := tp.B.stop()
	if !ok {
		return
	}
	a, b := afterA.sub(beforeA), afterB.sub(beforeB)
	t.Logf("A: %+v\nB: %+v", a, b)
	wantNoDrops(t, tp.A, a)
	wantNoDrops(t, tp.B, b)
	// Every IMIX packet of 1500 bytes left A as two tunnel packets: one in twelve of the schedule.
	toB := sizes.Sent + imix.Sent + imix.Sent/12
	// The control connections' TCP segments (and keepalives) add a few packets either way.
	if b.ReceivedPackets < toB || b.ReceivedPackets > toB+200 || a.SentPackets < toB || a.SentPackets > toB+200 {
		t.Errorf("A sent %d, B received %d packets; loadgen sent %d through the tunnel", a.SentPackets, b.ReceivedPackets, toB)
	}
	if a.ReceivedPackets < back.Sent || b.SentPackets < back.Sent {
		t.Errorf("B sent %d, A received %d packets; loadgen sent %d from B", b.SentPackets, a.ReceivedPackets, back.Sent)
	}
}

// TestE2EMTU checks the boundary of the tunnel MTU and WireGuard's padding over links just big
// enough for a full tunnel packet (1420 + 32 bytes of WireGuard + 8 UDP + 20 IPv4 = 1480):
//
//   - every inner packet length from 1405 to 1420 arrives intact, and the outer packets are not
//     fragmented: padding to a multiple of 16 (WireGuard 5.4.6) stops at the MTU;
//   - each captured transport message's length is 32 + the padded inner length;
//   - one byte more (1421) with DF clear is fragmented by the sending kernel into two inner packets
//     (IPv4 FragCreates +2) that the receiving kernel reassembles (ReasmOKs +1);
//   - with DF set (IP_PMTUDISC_DO) the kernel rejects it at send with EMSGSIZE.
func TestE2EMTU(t *testing.T) {
	checkLeaks(t)
	impl := underTest(t)
	tp := newTopo(t, topoConfig{A: impl, B: impl, LinkMTU: 1480})
	tp.start()
	reach(t, tp.A, tp.B, 10*time.Second)

	const port = 9100
	to := netip.AddrPortFrom(tp.B.inner, port)
	var rx, tx *net.UDPConn
	if err := tp.B.ns.Do(func() (err error) { rx, err = net.ListenUDP("udp4", net.UDPAddrFromAddrPort(to)); return err }); err != nil {
		t.Fatal(err)
	}
	defer rx.Close()
	if err := tp.A.ns.Do(func() (err error) { tx, err = net.DialUDP("udp4", nil, net.UDPAddrFromAddrPort(to)); return err }); err != nil {
		t.Fatal(err)
	}
	defer tx.Close()
	// exchange sends a payload of n bytes (a pattern that starts with n) and expects it back intact.
	exchange := func(n int) error {
		msg := make([]byte, n)
		for i := range msg {
			msg[i] = byte(n + i)
		}
		if _, err := tx.Write(msg); err != nil {
			return err
		}
		buf := make([]byte, 65536)
		rx.SetReadDeadline(time.Now().Add(2 * time.Second))
		got, err := rx.Read(buf)
		if err != nil {
			return fmt.Errorf("%d-byte payload did not arrive: %w", n, err)
		}
		if !bytes.Equal(buf[:got], msg) {
			return fmt.Errorf("%d-byte payload arrived as %d different bytes", n, got)
		}
		return nil
	}

	capture := startCapture(t, tp.B, "wan")
	fragsBefore := snmp(t, tp.A.ns, "Ip", "FragCreates")
	const mtu, overhead = 1420, 28
	for n := mtu - overhead - 15; n <= mtu-overhead; n++ {
		if err := exchange(n); err != nil {
			t.Error(err)
		}
	}
	if d := snmp(t, tp.A.ns, "Ip", "FragCreates") - fragsBefore; d != 0 {
		t.Errorf("A's kernel created %d fragments for inner packets that fit the tunnel MTU: the tunnel's packets outgrew the 1480-byte link", d)
	}
	msgs := capture.stop()
	var lengths []int
	for _, m := range msgs {
		// Only the exchanges' messages are this long: not keepalives (32 bytes), nor probes of
		// reach still arriving.
		if len(m) > 1000 {
			lengths = append(lengths, len(m))
		}
	}
	// Inner lengths 1405..1420 pad to 1408 (1405..1408) or 1424 capped at 1420: 4 messages of 1440 bytes, 12 of 1452.
	var want []int
	for inner := mtu - 15; inner <= mtu; inner++ {
		want = append(want, 32+min((inner+15)/16*16, mtu))
	}
	if fmt.Sprint(lengths) != fmt.Sprint(want) {
		t.Errorf("transport messages from A to B: lengths %v, want %v (32 + inner length padded to 16, at most the MTU)", lengths, want)
	}

	fragsBefore = snmp(t, tp.A.ns, "Ip", "FragCreates")
	reasmBefore := snmp(t, tp.B.ns, "Ip", "ReasmOKs")
	if err := exchange(mtu - overhead + 1); err != nil {
		t.Errorf("one byte over the MTU with DF clear: %v", err)
	}
	if d := snmp(t, tp.A.ns, "Ip", "FragCreates") - fragsBefore; d != 2 {
		t.Errorf("A's kernel created %d fragments of a 1421-byte packet, want 2", d)
	}
	if d := snmp(t, tp.B.ns, "Ip", "ReasmOKs") - reasmBefore; d != 1 {
		t.Errorf("B's kernel reassembled %d packets, want 1", d)
	}

	raw, err := tx.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var serr error
	if err := raw.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_IP, unix.IP_MTU_DISCOVER, unix.IP_PMTUDISC_DO)
	}); err != nil || serr != nil {
		t.Fatal(err, serr)
	}
	if err := exchange(mtu - overhead); err != nil {
		t.Errorf("largest payload with DF set: %v", err)
	}
	if _, err := tx.Write(make([]byte, mtu-overhead+1)); !errors.Is(err, unix.EMSGSIZE) {
		t.Errorf("one byte over the MTU with DF set: send returned %v, want EMSGSIZE", err)
	}
	rx.Close()
	tx.Close()
	if c, ok := tp.B.stop(); ok {
		wantNoDrops(t, tp.B, c)
	}
	tp.A.stop()
}

// TestE2EFragmentOrder sends one flow that alternates payloads the kernel must fragment to fit the
// tunnel (1472 bytes: a 1500-byte IP packet, two fragments) with small ones. They enter the tunnel
// in order and must leave it in order, as they do through wireguard-go: loadgen counts no
// reordering.
func TestE2EFragmentOrder(t *testing.T) {
	tp := startLoadPair(t)
	r := loadSend(t, tp.A, tp.B, "-rate", "5000", "-size", "1472,64", "-duration", "1s")
	wantClean(t, r)
	if r.Reordered != 0 {
		t.Errorf("%d of %d datagrams of one flow arrived out of order", r.Reordered, r.Sent)
	}
	tp.B.stop()
	tp.A.stop()
}
