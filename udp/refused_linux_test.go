// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package udp

import (
	"bytes"
	"net/netip"
	"testing"
	"time"
)

// TestWriteBatchSkipsRefused: a destination the kernel refuses (a class E address, as a prohibited
// or unreachable route would be) costs only its own datagrams, alone or as a GSO run: every other
// datagram of the batch, before and after it, arrives, the error names the refusal, and
// WriteBatchReport marks exactly the refused datagrams.
func TestWriteBatchSkipsRefused(t *testing.T) {
	a, err := Listen(netip.MustParseAddrPort("127.0.0.1:0"))
	if err != nil {
		t.Skipf("no IPv4 loopback socket: %v", err)
	}
	defer a.Close()
	b, err := Listen(netip.MustParseAddrPort("127.0.0.1:0"))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	refused := netip.MustParseAddrPort("240.0.0.1:9") // class E: the kernel refuses it (EINVAL)
	// good, refused, good, then a run of refused datagrams long enough to be one GSO message,
	// then good ones, one of them a run too.
	var out [][]byte
	var dsts []netip.AddrPort
	var want []bool
	add := func(dst netip.AddrPort, n int) {
		for range n {
			out = append(out, bytes.Repeat([]byte{byte(len(out))}, 200))
			dsts = append(dsts, dst)
			want = append(want, dst == refused)
		}
	}
	add(b.LocalAddr(), 1)
	add(refused, 1)
	add(b.LocalAddr(), 1)
	add(refused, 6)
	add(b.LocalAddr(), 6)
	marked := make([]bool, len(out))
	nrefused, err := a.WriteBatchReport(out, dsts, marked)
	if err == nil || nrefused != 7 {
		t.Fatalf("WriteBatchReport: %d refused, err %v; want 7 and the refusal", nrefused, err)
	}
	for i := range want {
		if marked[i] != want[i] {
			t.Fatalf("datagram %d: refused %v, want %v", i, marked[i], want[i])
		}
	}
	if a.WriteBatch(out, dsts) == nil {
		t.Fatal("WriteBatch did not report the refusal")
	}
	// Both sends deliver every good datagram: 8 each. A lost one fails the test at the deadline
	// (closing b ends the blocked read).
	done := make(chan int)
	go func() {
		bufs := make([][]byte, 16)
		for i := range bufs {
			bufs[i] = make([]byte, 2048)
		}
		sizes, srcs := make([]int, 16), make([]netip.AddrPort, 16)
		got := 0
		for got < 16 {
			k, err := b.ReadBatch(bufs[got:], sizes[got:], srcs[got:])
			if err != nil {
				break
			}
			got += k
		}
		done <- got
	}()
	select {
	case got := <-done:
		if got != 16 {
			t.Fatalf("%d of 16 good datagrams arrived", got)
		}
	case <-time.After(2 * time.Second):
		b.Close()
		t.Fatalf("%d of 16 good datagrams arrived", <-done)
	}
}
