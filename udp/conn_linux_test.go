// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package udp

import (
	"bytes"
	"net/netip"
	"testing"
)

// TestConnAllocatesNothing: on Linux a batch sent and received through a Conn (recvmmsg and
// sendmmsg over arrays made once, sources parsed into addresses kept per message) allocates
// nothing, for IPv4 and dual-stack sockets, with GSO and GRO where the kernel has them.
func TestConnAllocatesNothing(t *testing.T) {
	for _, laddr := range []string{"127.0.0.1:0", "[::1]:0"} {
		a, b := connPair(t, laddr)
		const n = 16
		out, dsts := make([][]byte, n), make([]netip.AddrPort, n)
		bufs, sizes, srcs := make([][]byte, n), make([]int, n), make([]netip.AddrPort, n)
		for i := range out {
			out[i] = bytes.Repeat([]byte{byte(i)}, 1200)
			dsts[i] = b.LocalAddr()
			bufs[i] = make([]byte, 2048)
		}
		roundTrip := func() {
			if err := a.WriteBatch(out, dsts); err != nil {
				t.Fatal(err)
			}
			for got := 0; got < n; {
				k, err := b.ReadBatch(bufs[got:], sizes[got:], srcs[got:])
				if err != nil {
					t.Fatal(err)
				}
				got += k
			}
		}
		roundTrip()
		if allocs := testing.AllocsPerRun(50, roundTrip); allocs != 0 {
			t.Errorf("%s: %.1f allocations per batch sent and received, want 0", laddr, allocs)
		}
		for i := range n {
			if sizes[i] != len(out[i]) || srcs[i] != a.LocalAddr() {
				t.Fatalf("%s: datagram %d: %d bytes from %v, want %d from %v", laddr, i, sizes[i], srcs[i], len(out[i]), a.LocalAddr())
			}
		}
	}
}
