// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package udp

import (
	"net"
	"net/netip"
	"testing"

	"golang.org/x/sys/unix"
)

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
	var s mmsgs
	s.reserve(1, 0)
	ll := netip.MustParseAddrPort("[fe80::1%4]:51820")
	s.putName(&s.names[0], ll, false)
	if s.names[0].Scope_id != 4 {
		t.Errorf("putName: scope id %d, want 4", s.names[0].Scope_id)
	}
	if got := s.source(0); got != ll {
		t.Errorf("source: %v, want %v", got, ll)
	}
}

// TestSockaddrs: destinations become the sockaddr the socket's family takes (IPv4 on an IPv4
// socket, v4-mapped on a dual-stack one) and sources come back as they were sent to, IPv4 unmapped.
func TestSockaddrs(t *testing.T) {
	var s mmsgs
	s.reserve(1, 0)
	for _, c := range []struct {
		dst    string
		v4     bool
		family uint16
		size   uint32
	}{
		{"192.0.2.1:51820", true, unix.AF_INET, unix.SizeofSockaddrInet4},
		{"[::ffff:192.0.2.1]:51820", true, unix.AF_INET, unix.SizeofSockaddrInet4},
		{"192.0.2.1:51820", false, unix.AF_INET6, unix.SizeofSockaddrInet6},
		{"[2001:db8::1]:9", false, unix.AF_INET6, unix.SizeofSockaddrInet6},
		{"[2001:db8::1]:9", true, unix.AF_INET6, unix.SizeofSockaddrInet6}, // refused by the kernel
	} {
		dst := netip.MustParseAddrPort(c.dst)
		_, size := s.putName(&s.names[0], dst, c.v4)
		if s.names[0].Family != c.family || size != c.size {
			t.Errorf("%v (IPv4 socket %v): family %d, %d bytes; want %d, %d", dst, c.v4, s.names[0].Family, size, c.family, c.size)
		}
		want := netip.AddrPortFrom(dst.Addr().Unmap(), dst.Port())
		if got := s.source(0); got != want {
			t.Errorf("%v (IPv4 socket %v): source %v, want %v", dst, c.v4, got, want)
		}
	}
	s.names[0].Family = unix.AF_UNIX
	if got := s.source(0); got.IsValid() {
		t.Errorf("source of an AF_UNIX sockaddr: %v, want none", got)
	}
}
