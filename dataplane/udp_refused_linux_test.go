package dataplane

import (
	"bytes"
	"net"
	"net/netip"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestUDPWriteBatchSkipsRefused: a destination the kernel refuses (a class E address, as a
// prohibited or unreachable route would be) costs only its own datagrams, alone or as a GSO run: every
// other datagram of the batch, before and after it, arrives, the error names the refusal, and
// writeBatch marks exactly the refused datagrams.
func TestUDPWriteBatchSkipsRefused(t *testing.T) {
	a, err := NewUDP(netip.MustParseAddrPort("127.0.0.1:0"))
	if err != nil {
		t.Skipf("no IPv4 loopback socket: %v", err)
	}
	defer a.Close()
	b, err := NewUDP(netip.MustParseAddrPort("127.0.0.1:0"))
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
	failed := make([]bool, len(out))
	nfailed, err := a.writeBatch(out, dsts, failed)
	if err == nil || nfailed != 7 {
		t.Fatalf("writeBatch: %d failed, err %v; want 7 and the refusal", nfailed, err)
	}
	for i := range want {
		if failed[i] != want[i] {
			t.Fatalf("datagram %d: failed %v, want %v", i, failed[i], want[i])
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

// TestZoneCache: IPv6 zones become the sockaddr's scope id (by number or interface name) and back,
// so that link-local endpoints can be sent to and replied to.
func TestZoneCache(t *testing.T) {
	var z zoneCache
	for _, c := range []struct {
		zone string
		want uint32
	}{{"", 0}, {"3", 3}, {"7", 7}, {"no-such-interface0", 0}} {
		if got := z.index(c.zone); got != c.want {
			t.Errorf("index(%q) = %d, want %d", c.zone, got, c.want)
		}
	}
	if lo, err := net.InterfaceByName("lo"); err == nil {
		if got := z.index("lo"); got != uint32(lo.Index) {
			t.Errorf("index(lo) = %d, want %d", got, lo.Index)
		}
	}
	if got := z.name(5); got != "5" {
		t.Errorf("name(5) = %q", got)
	}
	if got := z.index(z.name(9)); got != 9 {
		t.Errorf("index(name(9)) = %d", got)
	}
	b := &mmsgBatch{}
	var sa unix.RawSockaddrInet6
	b.putName(&sa, &net.UDPAddr{IP: net.ParseIP("fe80::1"), Port: 51820, Zone: "4"})
	if sa.Scope_id != 4 {
		t.Errorf("putName: scope id %d, want 4", sa.Scope_id)
	}
	var s mmsgSide
	s.names[0] = sa
	if a := s.source(0).(*net.UDPAddr); a.Zone != "4" || a.Port != 51820 {
		t.Errorf("source: %v, want fe80::1%%4 port 51820", a)
	}
}
