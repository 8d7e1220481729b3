// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package dataplane

import (
	"math/rand/v2"
	"net/netip"
	"slices"
	"testing"
)

func TestAllowedIPsBasic(t *testing.T) {
	var tab AllowedIPs
	a, b, c := &Peer{}, &Peer{}, &Peer{}
	tab.Insert(netip.MustParsePrefix("10.0.0.0/8"), a)
	tab.Insert(netip.MustParsePrefix("10.1.0.0/16"), b)
	tab.Insert(netip.MustParsePrefix("10.1.2.3/32"), c)
	tab.Insert(netip.MustParsePrefix("0.0.0.0/0"), c)
	tab.Insert(netip.MustParsePrefix("fd00::/8"), a)
	tab.Insert(netip.MustParsePrefix("fd00:1::1/128"), b)
	tab.Insert(netip.MustParsePrefix("10.200.0.7/8"), b) // masked: replaces a's 10.0.0.0/8
	for _, c2 := range []struct {
		addr string
		want *Peer
	}{
		{"10.2.3.4", b}, {"10.1.9.9", b}, {"10.1.2.3", c}, {"192.168.1.1", c},
		{"fd00::5", a}, {"fd00:1::1", b}, {"fe80::1", nil}, {"::ffff:10.1.2.3", nil},
	} {
		if got := tab.Lookup(netip.MustParseAddr(c2.addr)); got != c2.want {
			t.Errorf("Lookup(%s) = %p, want %p", c2.addr, got, c2.want)
		}
	}
	if got := tab.Prefixes(b); !slices.Equal(got, []netip.Prefix{
		netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("10.1.0.0/16"), netip.MustParsePrefix("fd00:1::1/128"),
	}) {
		t.Errorf("Prefixes(b) = %v", got)
	}
	tab.RemovePeer(b)
	if got := tab.Lookup(netip.MustParseAddr("10.1.9.9")); got != c {
		t.Errorf("after RemovePeer(b): Lookup(10.1.9.9) = %p, want c %p", got, c)
	}
	if tab.Remove(netip.MustParsePrefix("10.0.0.0/8")) {
		t.Error("Remove of a prefix no longer present reported true")
	}
	if !tab.Remove(netip.MustParsePrefix("0.0.0.0/0")) || tab.Lookup(netip.MustParseAddr("192.168.1.1")) != nil {
		t.Error("Remove(0.0.0.0/0) did not remove the default route")
	}
}

// TestAllowedIPsModel checks the trie against a brute-force list of prefixes with random inserts,
// removes and peer removals, in both families, with prefixes clustered so they nest and collide.
func TestAllowedIPsModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	peers := make([]*Peer, 6)
	for i := range peers {
		peers[i] = &Peer{}
	}
	randAddr := func(is4 bool) netip.Addr {
		// A few fixed high bits make prefixes share paths.
		if is4 {
			return netip.AddrFrom4([4]byte{10, byte(rng.IntN(4)), byte(rng.IntN(256)), byte(rng.IntN(256))})
		}
		var b [16]byte
		b[0], b[1] = 0xfd, byte(rng.IntN(4))
		for i := 2; i < 16; i++ {
			b[i] = byte(rng.IntN(256))
		}
		if rng.IntN(2) == 0 {
			clear(b[8:14])
		}
		return netip.AddrFrom16(b)
	}
	randPrefix := func() netip.Prefix {
		is4 := rng.IntN(2) == 0
		width := 128
		if is4 {
			width = 32
		}
		bitsN := rng.IntN(width + 1)
		if rng.IntN(2) == 0 {
			bitsN = width - rng.IntN(min(width, 12)) // many long prefixes
		}
		return netip.PrefixFrom(randAddr(is4), bitsN).Masked()
	}
	var tab AllowedIPs
	model := map[netip.Prefix]*Peer{}
	check := func(a netip.Addr) {
		var want *Peer
		best := -1
		for p, owner := range model {
			if p.Contains(a) && p.Bits() > best {
				best, want = p.Bits(), owner
			}
		}
		if got := tab.Lookup(a); got != want {
			t.Fatalf("Lookup(%s) = %p, want %p", a, got, want)
		}
	}
	for i := 0; i < 3000; i++ {
		switch r := rng.IntN(20); {
		case r < 12:
			p, owner := randPrefix(), peers[rng.IntN(len(peers))]
			tab.Insert(p, owner)
			model[p] = owner
		case r < 18:
			p := randPrefix()
			if rng.IntN(2) == 0 && len(model) > 0 {
				for q := range model { // remove one that exists
					p = q
					break
				}
			}
			_, had := model[p]
			if got := tab.Remove(p); got != had {
				t.Fatalf("Remove(%s) = %v, want %v", p, got, had)
			}
			delete(model, p)
		default:
			owner := peers[rng.IntN(len(peers))]
			tab.RemovePeer(owner)
			for p, o := range model {
				if o == owner {
					delete(model, p)
				}
			}
		}
		for range 8 {
			check(randAddr(rng.IntN(2) == 0))
		}
		for p := range model { // addresses at and just inside stored prefixes
			check(p.Addr())
			break
		}
	}
	for _, owner := range peers {
		var want []netip.Prefix
		for p, o := range model {
			if o == owner {
				want = append(want, p)
			}
		}
		got := tab.Prefixes(owner)
		slices.SortFunc(want, cmpPrefix)
		slices.SortFunc(got, cmpPrefix)
		if !slices.Equal(got, want) {
			t.Fatalf("Prefixes = %v, want %v", got, want)
		}
	}
}

func cmpPrefix(a, b netip.Prefix) int {
	if c := a.Addr().Compare(b.Addr()); c != 0 {
		return c
	}
	return a.Bits() - b.Bits()
}

func TestAllowedIPsLookupAllocatesNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are not meaningful under the race detector")
	}
	var tab AllowedIPs
	p := &Peer{}
	tab.Insert(netip.MustParsePrefix("10.0.0.0/8"), p)
	tab.Insert(netip.MustParsePrefix("fd00::/16"), p)
	a4, a6 := netip.MustParseAddr("10.9.8.7"), netip.MustParseAddr("fd00::1")
	if n := testing.AllocsPerRun(100, func() {
		if tab.Lookup(a4) != p || tab.Lookup(a6) != p {
			t.Fatal("lookup failed")
		}
	}); n != 0 {
		t.Fatalf("Lookup allocates %v times", n)
	}
}
