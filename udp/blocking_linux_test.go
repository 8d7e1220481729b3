// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package udp

import (
	"bytes"
	"net/netip"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// blockingPair returns a BlockingConn listening on host and one connected to it, closed when the
// test ends; it skips the test if the system has no such socket.
func blockingPair(t *testing.T, host string) (send, recv *BlockingConn) {
	t.Helper()
	rc, err := ListenBlocking(netip.AddrPortFrom(netip.MustParseAddr(host), 0))
	if err != nil {
		t.Skipf("no loopback %s: %v", host, err)
	}
	t.Cleanup(func() { rc.Close() })
	sc, err := DialBlocking(rc.LocalAddr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sc.Close() })
	if err := rc.SetReadTimeout(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	return sc, rc
}

// message returns a Message of one buffer.
func message(buf []byte) Message { return Message{Buffers: [][]byte{buf}} }

// readAll reads until want datagrams arrived, cutting coalesced messages apart, and checks that
// they came from src.
func readAll(t *testing.T, c *BlockingConn, want int, src netip.AddrPort) [][]byte {
	t.Helper()
	ms := make([]Message, 8)
	for i := range ms {
		ms[i] = message(make([]byte, 65536))
	}
	var got [][]byte
	for len(got) < want {
		n, err := c.ReadBatch(ms)
		if err != nil {
			t.Fatalf("after %d of %d datagrams: %v", len(got), want, err)
		}
		for _, m := range ms[:n] {
			if m.Addr != src {
				t.Fatalf("message from %v, want %v", m.Addr, src)
			}
			data := m.Buffers[0][:m.N]
			size := m.Segment
			if size == 0 {
				size = len(data)
			}
			for len(data) > 0 {
				seg := data[:min(size, len(data))]
				got = append(got, bytes.Clone(seg))
				data = data[len(seg):]
			}
		}
	}
	return got
}

func TestBlockingBatchAndGSORoundTrip(t *testing.T) {
	for _, host := range []string{"127.0.0.1", "::1"} {
		for _, gro := range []bool{false, true} {
			send, recv := blockingPair(t, host)
			if err := send.CheckGSO(); err != nil {
				t.Skipf("kernel without UDP GSO: %v", err)
			}
			if gro {
				if err := recv.EnableGRO(); err != nil {
					t.Skipf("kernel without UDP GRO: %v", err)
				}
			}
			// Three plain datagrams, then one GSO message of five 100-byte datagrams and a
			// 30-byte tail, in a single sendmmsg.
			var want [][]byte
			ms := make([]Message, 4)
			for i := range 3 {
				p := bytes.Repeat([]byte{byte(i)}, 10+i)
				want = append(want, p)
				ms[i] = message(p)
			}
			var gso []byte
			for i := range 6 {
				n := 100
				if i == 5 {
					n = 30
				}
				p := bytes.Repeat([]byte{byte(10 + i)}, n)
				want = append(want, p)
				gso = append(gso, p...)
			}
			ms[3] = message(gso)
			ms[3].Segment = 100
			if err := send.WriteBatch(ms); err != nil {
				t.Fatalf("%s gro=%v: WriteBatch: %v", host, gro, err)
			}
			if ms[3].N != len(gso) {
				t.Errorf("%s gro=%v: the GSO message sent %d bytes, want %d", host, gro, ms[3].N, len(gso))
			}
			got := readAll(t, recv, len(want), send.LocalAddr())
			if len(got) != len(want) {
				t.Fatalf("%s gro=%v: got %d datagrams, want %d", host, gro, len(got), len(want))
			}
			for i := range want {
				if !bytes.Equal(got[i], want[i]) {
					t.Errorf("%s gro=%v: datagram %d = %d bytes of %d, want %d bytes of %d",
						host, gro, i, len(got[i]), got[i][0], len(want[i]), want[i][0])
				}
			}
		}
	}
}

// TestBlockingDualStack: a BlockingConn listening without an address receives from IPv4 and IPv6
// peers alike, and reports an IPv4 source unmapped.
func TestBlockingDualStack(t *testing.T) {
	rc, err := ListenBlocking(netip.AddrPortFrom(netip.Addr{}, 0))
	if err != nil {
		t.Skipf("no dual-stack socket: %v", err)
	}
	defer rc.Close()
	if err := rc.SetReadTimeout(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	for _, host := range []string{"127.0.0.1", "::1"} {
		sc, err := DialBlocking(netip.AddrPortFrom(netip.MustParseAddr(host), rc.LocalAddr().Port()))
		if err != nil {
			t.Skipf("no loopback %s: %v", host, err)
		}
		defer sc.Close()
		if !sc.LocalAddr().Addr().IsLoopback() || sc.LocalAddr().Addr().Is4() != (host == "127.0.0.1") {
			t.Errorf("local address of a socket connected to %s: %v", host, sc.LocalAddr())
		}
		if err := sc.WriteBatch([]Message{message([]byte(host))}); err != nil {
			t.Fatal(err)
		}
		if got := readAll(t, rc, 1, sc.LocalAddr()); string(got[0]) != host {
			t.Errorf("got %q, want %q", got[0], host)
		}
	}
}

func TestBlockingReadTimeout(t *testing.T) {
	_, recv := blockingPair(t, "127.0.0.1")
	if err := recv.SetReadTimeout(20 * time.Millisecond); err != nil {
		t.Fatal(err)
	}
	ms := []Message{message(make([]byte, 100))}
	if n, err := recv.ReadBatch(ms); n != 0 || err != ErrTimeout {
		t.Errorf("ReadBatch on a silent socket = %d, %v; want ErrTimeout", n, err)
	}
	if n, err := recv.TryReadBatch(ms); n != 0 || err != nil {
		t.Errorf("TryReadBatch on a silent socket = %d, %v; want 0 and no error", n, err)
	}
}

func TestBlockingWriteBatchReportsUnreachablePort(t *testing.T) {
	// A port nobody listens on: after the kernel's ICMP port unreachable, the connected socket's
	// next send fails.
	send, recv := blockingPair(t, "127.0.0.1")
	recv.Close()
	ms := []Message{message([]byte("x"))}
	var err error
	for range 10 {
		if err = send.WriteBatch(ms); err != nil {
			break
		}
		time.Sleep(time.Millisecond)
	}
	if err != unix.ECONNREFUSED {
		t.Errorf("WriteBatch to a closed port: %v, want ECONNREFUSED", err)
	}
}

func TestBlockingZeroAllocations(t *testing.T) {
	send, recv := blockingPair(t, "127.0.0.1")
	out := make([]Message, 16)
	in := make([]Message, 16)
	for i := range out {
		out[i] = message(make([]byte, 64))
		in[i] = message(make([]byte, 64))
	}
	allocs := testing.AllocsPerRun(100, func() {
		if err := send.WriteBatch(out); err != nil {
			t.Fatal(err)
		}
		for got := 0; got < len(out); {
			n, err := recv.ReadBatch(in)
			if err != nil {
				t.Fatal(err)
			}
			got += n
		}
	})
	if allocs != 0 {
		t.Errorf("a batch round trip allocates %v times", allocs)
	}
}
