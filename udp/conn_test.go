// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package udp

import (
	"bytes"
	"net/netip"
	"testing"
	"time"
)

// connPair returns two Conns on laddr (port 0), closed when the test ends; it skips the test if the
// system has no such socket.
func connPair(t *testing.T, laddr string) (a, b *Conn) {
	t.Helper()
	a, err := Listen(netip.MustParseAddrPort(laddr))
	if err != nil {
		t.Skipf("no %s socket: %v", laddr, err)
	}
	t.Cleanup(func() { a.Close() })
	if b, err = Listen(netip.MustParseAddrPort(laddr)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return a, b
}

func TestConnBatch(t *testing.T) {
	for _, laddr := range []string{"127.0.0.1:0", "[::1]:0"} {
		a, b := connPair(t, laddr)
		const n = 40
		out := make([][]byte, n)
		dsts := make([]netip.AddrPort, n)
		for i := range out {
			out[i] = bytes.Repeat([]byte{byte(i)}, 100+i)
			dsts[i] = b.LocalAddr()
		}
		if err := a.WriteBatch(out, dsts); err != nil {
			t.Fatal(err)
		}
		bufs := make([][]byte, n)
		for i := range bufs {
			bufs[i] = make([]byte, 2048)
		}
		sizes, srcs := make([]int, n), make([]netip.AddrPort, n)
		for got := 0; got < n; {
			k, err := b.ReadBatch(bufs[got:], sizes[got:], srcs[got:])
			if err != nil {
				t.Fatal(err)
			}
			got += k
		}
		for i := range out {
			if !bytes.Equal(bufs[i][:sizes[i]], out[i]) || srcs[i] != a.LocalAddr() {
				t.Fatalf("%s: datagram %d: %d bytes from %v, want %d from %v", laddr, i, sizes[i], srcs[i], len(out[i]), a.LocalAddr())
			}
		}
	}
}

// TestConnDualStack: a socket on [::] exchanges datagrams with an IPv4 socket, as Listen
// promises; IPv4 sources come back unmapped.
func TestConnDualStack(t *testing.T) {
	d, err := Listen(netip.MustParseAddrPort("[::]:0"))
	if err != nil {
		t.Skipf("no IPv6 socket: %v", err)
	}
	defer d.Close()
	v4, err := Listen(netip.MustParseAddrPort("127.0.0.1:0"))
	if err != nil {
		t.Fatal(err)
	}
	defer v4.Close()
	// A read that never completes fails the test instead of hanging it: closing the sockets
	// makes blocked reads return.
	timeout := time.AfterFunc(5*time.Second, func() { d.Close(); v4.Close() })
	defer timeout.Stop()
	to := netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), d.LocalAddr().Port())
	if err := v4.WriteBatch([][]byte{[]byte("ping")}, []netip.AddrPort{to}); err != nil {
		t.Fatal(err)
	}
	bufs, sizes, srcs := [][]byte{make([]byte, 64)}, make([]int, 1), make([]netip.AddrPort, 1)
	if _, err := d.ReadBatch(bufs, sizes, srcs); err != nil {
		t.Fatal(err)
	}
	if string(bufs[0][:sizes[0]]) != "ping" || srcs[0] != v4.LocalAddr() {
		t.Fatalf("got %q from %v, want ping from %v", bufs[0][:sizes[0]], srcs[0], v4.LocalAddr())
	}
	if err := d.WriteBatch([][]byte{[]byte("pong")}, srcs); err != nil {
		t.Fatalf("replying to an IPv4 source from [::]: %v", err)
	}
	if _, err := v4.ReadBatch(bufs, sizes, srcs); err != nil {
		t.Fatal(err)
	}
	if string(bufs[0][:sizes[0]]) != "pong" {
		t.Fatalf("got %q, want pong", bufs[0][:sizes[0]])
	}
}
