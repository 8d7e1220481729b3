package dataplane

import (
	"bytes"
	"net/netip"
	"testing"
)

// TestUDPGSO sends runs of equal-sized datagrams (with a shorter last one, a change of destination
// and a change of size breaking the runs) and checks that each arrives as its own datagram, in order.
// Where the kernel has UDP GSO, it also checks that runs went out as segmented messages, and where it
// has GRO, that the receivers cut coalesced messages apart.
func TestUDPGSO(t *testing.T) {
	a, err := NewUDP(netip.MustParseAddrPort("127.0.0.1:0"))
	if err != nil {
		t.Skipf("no loopback socket: %v", err)
	}
	defer a.Close()
	var rx [2]*UDPConn
	for i := range rx {
		if rx[i], err = NewUDP(netip.MustParseAddrPort("127.0.0.1:0")); err != nil {
			t.Fatal(err)
		}
		defer rx[i].Close()
	}
	type dgram struct {
		to   int
		size int
	}
	var plan []dgram
	for range 70 { // more than maxGSOSegments in one run
		plan = append(plan, dgram{0, 1452})
	}
	plan = append(plan, dgram{0, 100}, dgram{0, 1452}, dgram{1, 1452}, dgram{1, 1452}, dgram{1, 60})
	for range minGSOSegments {
		plan = append(plan, dgram{1, 80})
	}
	plan = append(plan, dgram{0, 33})
	bufs := make([][]byte, len(plan))
	dsts := make([]netip.AddrPort, len(plan))
	want := [2][][]byte{}
	for i, d := range plan {
		bufs[i] = bytes.Repeat([]byte{byte(i)}, d.size)
		dsts[i] = rx[d.to].LocalAddr()
		want[d.to] = append(want[d.to], bufs[i])
	}
	if err := a.WriteBatch(bufs, dsts); err != nil {
		t.Fatal(err)
	}
	for r := range rx {
		got := 0
		in := make([][]byte, MaxBatch)
		for i := range in {
			in[i] = make([]byte, 2048)
		}
		sizes, srcs := make([]int, MaxBatch), make([]netip.AddrPort, MaxBatch)
		for got < len(want[r]) {
			n, err := rx[r].ReadBatch(in, sizes, srcs)
			if err != nil {
				t.Fatal(err)
			}
			for i := range n {
				if !bytes.Equal(in[i][:sizes[i]], want[r][got]) {
					t.Fatalf("receiver %d datagram %d: %d bytes of %d, want %d of %d", r, got, sizes[i], in[i][0], len(want[r][got]), want[r][got][0])
				}
				got++
			}
		}
	}
	if a.gso {
		// Runs: 45 of 1452 (as many as fit in 64 KiB), 25 more and the 100 that ends them;
		// minGSOSegments of 80 to receiver 1. The lone 1452, and the two 1452 and the 60 to
		// receiver 1 (a run shorter than minGSOSegments), go a datagram per message, without a
		// control message.
		if a.gsoMessages != 3 {
			t.Errorf("%d segmented messages, want 3", a.gsoMessages)
		}
	} else {
		t.Log("kernel without UDP GSO: one message per datagram")
	}
	// Loopback hands a segmented message to a socket with GRO on as it is (Linux 5.0's
	// udp_unexpected_gso): the receiver must have cut coalesced messages apart.
	if a.gso && rx[0].gro && rx[0].groCoalesced == 0 {
		t.Error("GRO on, but no coalesced message was received")
	}
	t.Logf("GSO %v, GRO %v: %d segmented messages sent, %d+%d coalesced received", a.gso, rx[0].gro, a.gsoMessages, rx[0].groCoalesced, rx[1].groCoalesced)
}

// TestUDPGROWholeMessages: a read hands over a coalesced message whole when it can, stopping before
// one that would not fit in the buffers left rather than cutting it between two reads.
func TestUDPGROWholeMessages(t *testing.T) {
	a, err := NewUDP(netip.MustParseAddrPort("127.0.0.1:0"))
	if err != nil {
		t.Skipf("no loopback socket: %v", err)
	}
	defer a.Close()
	rx, err := NewUDP(netip.MustParseAddrPort("127.0.0.1:0"))
	if err != nil {
		t.Fatal(err)
	}
	defer rx.Close()
	if !a.gso || !rx.gro {
		t.Skip("kernel without UDP GSO and GRO")
	}
	const run = 45 // 1452-byte datagrams in one segmented message
	for range 2 {
		bufs, dsts := make([][]byte, run), make([]netip.AddrPort, run)
		for i := range bufs {
			bufs[i], dsts[i] = make([]byte, 1452), rx.LocalAddr()
		}
		if err := a.WriteBatch(bufs, dsts); err != nil {
			t.Fatal(err)
		}
	}
	in := make([][]byte, run+run/2)
	for i := range in {
		in[i] = make([]byte, 2048)
	}
	sizes, srcs := make([]int, len(in)), make([]netip.AddrPort, len(in))
	for range 2 {
		if n, err := rx.ReadBatch(in, sizes, srcs); err != nil || n != run {
			t.Fatalf("read %d datagrams (%v), want the %d of one message", n, err, run)
		}
	}
}
