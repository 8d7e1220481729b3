// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package udp

import (
	"bytes"
	"encoding/binary"
	"net/netip"
	"testing"
)

// TestGSO sends runs of equal-sized datagrams (with a shorter last one, a change of destination
// and a change of size breaking the runs) and checks that each arrives as its own datagram, in order.
// Where the kernel has UDP GSO, it also checks that runs went out as segmented messages, and where it
// has GRO, that the receivers cut coalesced messages apart.
func TestGSO(t *testing.T) {
	a, err := Listen(netip.MustParseAddrPort("127.0.0.1:0"))
	if err != nil {
		t.Skipf("no loopback socket: %v", err)
	}
	defer a.Close()
	var rx [2]*Conn
	for i := range rx {
		if rx[i], err = Listen(netip.MustParseAddrPort("127.0.0.1:0")); err != nil {
			t.Fatal(err)
		}
		defer rx[i].Close()
	}
	type dgram struct {
		to   int
		size int
	}
	var plan []dgram
	for range 70 { // more than MaxGSOSegments in one run
		plan = append(plan, dgram{0, 1452})
	}
	plan = append(plan, dgram{0, 100}, dgram{0, 1452}, dgram{1, 1452}, dgram{1, 1452}, dgram{1, 60})
	for range minGSOSegments {
		plan = append(plan, dgram{1, 80})
	}
	plan = append(plan, dgram{0, 33})
	for range 47 { // a TSO super-packet's worth: one message's 45 and a rest of 2
		plan = append(plan, dgram{1, 1452})
	}
	bufs := make([][]byte, len(plan))
	dsts := make([]netip.AddrPort, len(plan))
	want := [2][][]byte{}
	for i, d := range plan {
		bufs[i] = bytes.Repeat([]byte{byte(i)}, d.size)
		dsts[i] = rx[d.to].LocalAddr()
		want[d.to] = append(want[d.to], bufs[i])
	}
	// Two calls, so that the last run is not cut by the maxBatch datagrams one call packs.
	cut := len(plan) - 47
	if err := a.WriteBatch(bufs[:cut], dsts[:cut]); err != nil {
		t.Fatal(err)
	}
	if err := a.WriteBatch(bufs[cut:], dsts[cut:]); err != nil {
		t.Fatal(err)
	}
	for r := range rx {
		got := 0
		in := make([][]byte, maxBatch)
		for i := range in {
			in[i] = make([]byte, 2048)
		}
		sizes, srcs := make([]int, maxBatch), make([]netip.AddrPort, maxBatch)
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
		// minGSOSegments of 80 to receiver 1; 45 of 1452 to receiver 1 and the 2 after them,
		// which go on the run though fewer than minGSOSegments. The lone 1452, and the two 1452
		// and the 60 to receiver 1 (a run shorter than minGSOSegments), go a datagram per
		// message, without a control message.
		if a.gsoMessages != 5 {
			t.Errorf("%d segmented messages, want 5", a.gsoMessages)
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

// TestGROWholeMessages: a read hands over a coalesced message whole when it can, stopping before
// one that would not fit in the buffers left rather than cutting it between two reads.
func TestGROWholeMessages(t *testing.T) {
	a, err := Listen(netip.MustParseAddrPort("127.0.0.1:0"))
	if err != nil {
		t.Skipf("no loopback socket: %v", err)
	}
	defer a.Close()
	rx, err := Listen(netip.MustParseAddrPort("127.0.0.1:0"))
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

// TestReadBuffers: ReadBuffers hands over every datagram once, in order, intact,
// at the offset in its buffer, whatever the mix: coalesced messages of the size its iovecs expect
// (which land in place), of other sizes (gathered and copied apart), single datagrams shorter and
// longer than that size, empty ones, and more than one call's buffers take (left to the next call);
// and the buffers it returns are the ones it was given, reordered.
func TestReadBuffers(t *testing.T) {
	for _, laddr := range []string{"127.0.0.1:0", "[::1]:0"} {
		a, rx := connPair(t, laddr)
		const offset = 16
		bufs := make([][]byte, maxBatch)
		owned := map[*byte]bool{}
		for i := range bufs {
			bufs[i] = make([]byte, 1600)
			owned[&bufs[i][0]] = true
		}
		sizes, srcs := make([]int, maxBatch), make([]netip.AddrPort, maxBatch)
		next, got := 0, 0 // datagrams sent and received
		payload := func(i, size int) []byte {
			p := make([]byte, size)
			for k := range p {
				p[k] = byte(i*7 + k)
			}
			if size >= 4 {
				binary.BigEndian.PutUint32(p, uint32(i))
			}
			return p
		}
		var sent [][]byte
		send := func(runs ...[2]int) { // runs of {count, size}
			var out [][]byte
			for _, r := range runs {
				for range r[0] {
					out = append(out, payload(next, r[1]))
					next++
				}
			}
			dsts := make([]netip.AddrPort, len(out))
			for i := range dsts {
				dsts[i] = rx.LocalAddr()
			}
			if err := a.WriteBatch(out, dsts); err != nil {
				t.Fatal(err)
			}
			sent = append(sent, out...)
			for got < next {
				n, err := rx.ReadBuffers(bufs, offset, sizes, srcs)
				if err != nil {
					t.Fatal(err)
				}
				for i := range n {
					if got >= len(sent) {
						t.Fatalf("%s: more datagrams than were sent", laddr)
					}
					if !bytes.Equal(bufs[i][offset:offset+sizes[i]], sent[got]) || srcs[i].Port() != a.LocalAddr().Port() {
						t.Fatalf("%s: datagram %d: %d bytes, want %d (source %v)", laddr, got, sizes[i], len(sent[got]), srcs[i])
					}
					got++
				}
				seen := map[*byte]bool{}
				for _, b := range bufs {
					if !owned[&b[0]] || seen[&b[0]] || len(b) != 1600 {
						t.Fatalf("%s: the buffers returned are not the ones given", laddr)
					}
					seen[&b[0]] = true
				}
			}
		}
		send([2]int{90, 1452}) // learns the size
		before := rx.groInPlace
		send([2]int{45, 1452}, [2]int{45, 1452}) // in place
		if a.gso && rx.gro && rx.groInPlace-before != 90 {
			t.Errorf("%s: %d of 90 datagrams of the size expected landed in place", laddr, rx.groInPlace-before)
		}
		send([2]int{10, 100})                   // coalesced, all within one expected datagram's size
		send([2]int{45, 1452})                  // expected again
		send([2]int{1, 1500})                   // one longer than expected, first in the call
		send([2]int{64, 100}, [2]int{45, 1452}) // more than its buffers, before one that is in place
		send([2]int{20, 1452}, [2]int{1, 1000}, [2]int{10, 1452}, [2]int{1, 1500}, [2]int{12, 800},
			[2]int{1, 0}, [2]int{45, 1452})
		send([2]int{200, 1452}) // more than one call takes
		send([2]int{64, 100})   // learns a small size: 64 buffers a message
		send([2]int{30, 1452}, [2]int{64, 100}, [2]int{3, 100}, [2]int{64, 100})
		send([2]int{100, 1452}, [2]int{1, 7}, [2]int{100, 1452})
		t.Logf("%s: GSO %v, GRO %v: %d of %d datagrams in place", laddr, a.gso, rx.gro, rx.groInPlace, next)

		// Nothing is allocated per call, scattered or not.
		out, dsts := make([][]byte, 90), make([]netip.AddrPort, 90)
		for i := range out {
			out[i], dsts[i] = payload(i, 1452), rx.LocalAddr()
		}
		roundTrip := func() {
			if err := a.WriteBatch(out, dsts); err != nil {
				t.Fatal(err)
			}
			for got := 0; got < len(out); {
				n, err := rx.ReadBuffers(bufs, offset, sizes, srcs)
				if err != nil {
					t.Fatal(err)
				}
				got += n
			}
		}
		roundTrip()
		if allocs := testing.AllocsPerRun(20, roundTrip); allocs != 0 {
			t.Errorf("%s: %.1f allocations per round trip, want 0", laddr, allocs)
		}
	}
}
