// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package dataplane

// Cryptokey routing (WireGuard paper, section 3): every peer owns a set of allowed IP prefixes. On
// send, the longest prefix that matches a packet's destination picks the peer whose keys encrypt it;
// on receive, the packet's inner source must match (by the same longest-prefix rule) the very peer
// whose keypair authenticated it.
//
// The table is a path-compressed binary trie per address family. Each node holds a masked prefix, the
// peer that owns exactly that prefix (or nil for a pure branching node) and two children chosen by the
// bit after the prefix. Readers are lock-free: nodes are immutable once published, and writers (one at
// a time, under mu) copy the path from the root to the change and publish the new root with one atomic
// store. A reader that loaded the old root keeps walking a complete, consistent old trie. Lookups
// allocate nothing; writes allocate O(depth) nodes.

import (
	"encoding/binary"
	"math/bits"
	"net/netip"
	"sync"
	"sync/atomic"
)

// ipKey is an address as a 128-bit big-endian number: IPv4 addresses use the top 32 bits.
type ipKey struct{ hi, lo uint64 }

// bit returns bit i of k, counting from the most significant.
func (k ipKey) bit(i uint8) uint8 {
	if i < 64 {
		return uint8(k.hi >> (63 - i) & 1)
	}
	return uint8(k.lo >> (127 - i) & 1)
}

// mask keeps the first n bits of k.
func (k ipKey) mask(n uint8) ipKey {
	switch {
	case n == 0:
		return ipKey{}
	case n <= 64:
		return ipKey{k.hi &^ (1<<(64-n) - 1), 0}
	case n < 128:
		return ipKey{k.hi, k.lo &^ (1<<(128-n) - 1)}
	}
	return k
}

// commonBits returns how many leading bits a and b share (at most 128).
func commonBits(a, b ipKey) uint8 {
	if x := a.hi ^ b.hi; x != 0 {
		return uint8(bits.LeadingZeros64(x))
	}
	return uint8(64 + bits.LeadingZeros64(a.lo^b.lo))
}

func keyOf(a netip.Addr) ipKey {
	if a.Is4() {
		b := a.As4()
		return ipKey{uint64(binary.BigEndian.Uint32(b[:])) << 32, 0}
	}
	b := a.As16()
	return ipKey{binary.BigEndian.Uint64(b[:8]), binary.BigEndian.Uint64(b[8:])}
}

type trieNode struct {
	key   ipKey // masked to cidr bits
	cidr  uint8
	peer  *Peer // owner of exactly key/cidr, or nil
	child [2]*trieNode
}

// AllowedIPs maps IP prefixes to peers with longest-prefix match, for IPv4 and IPv6. The zero value
// is an empty table. Lookup is safe concurrently with everything; writes are serialised internally.
type AllowedIPs struct {
	mu sync.Mutex // serialises writers; readers never take it
	// v4 and v6 are the roots of the two tries. Each Store (under mu) publishes a fully built trie;
	// it pairs with the Load at the start of a lookup, which then sees every node of that trie
	// initialised (the Go memory model's synchronized-before edge for atomics).
	v4, v6 atomic.Pointer[trieNode]
}

func (t *AllowedIPs) root(is4 bool) *atomic.Pointer[trieNode] {
	if is4 {
		return &t.v4
	}
	return &t.v6
}

// Lookup returns the peer owning the longest prefix that contains a, or nil.
func (t *AllowedIPs) Lookup(a netip.Addr) *Peer {
	if a.Is4() {
		return lookup(t.v4.Load(), keyOf(a), 32)
	}
	if a.Is6() {
		return lookup(t.v6.Load(), keyOf(a), 128)
	}
	return nil
}

// lookup4 and lookup6 take addresses straight from packet headers (4 and 16 bytes).
func (t *AllowedIPs) lookup4(a []byte) *Peer {
	return lookup(t.v4.Load(), ipKey{uint64(binary.BigEndian.Uint32(a)) << 32, 0}, 32)
}

func (t *AllowedIPs) lookup6(a []byte) *Peer {
	return lookup(t.v6.Load(), ipKey{binary.BigEndian.Uint64(a[:8]), binary.BigEndian.Uint64(a[8:16])}, 128)
}

func lookup(n *trieNode, k ipKey, width uint8) *Peer {
	var best *Peer
	for n != nil && commonBits(n.key, k) >= n.cidr {
		if n.peer != nil {
			best = n.peer
		}
		if n.cidr == width {
			break
		}
		n = n.child[k.bit(n.cidr)]
	}
	return best
}

// Insert makes p the owner of prefix (masked first), replacing any previous owner of exactly that
// prefix. A nil p or an invalid prefix is ignored.
func (t *AllowedIPs) Insert(prefix netip.Prefix, p *Peer) {
	if p == nil || !prefix.IsValid() {
		return
	}
	prefix = prefix.Masked()
	t.mu.Lock()
	defer t.mu.Unlock()
	r := t.root(prefix.Addr().Is4())
	r.Store(insert(r.Load(), keyOf(prefix.Addr()), uint8(prefix.Bits()), p))
}

// Remove deletes prefix (masked first) from the table if present and reports whether it was.
func (t *AllowedIPs) Remove(prefix netip.Prefix) bool {
	if !prefix.IsValid() {
		return false
	}
	prefix = prefix.Masked()
	t.mu.Lock()
	defer t.mu.Unlock()
	r := t.root(prefix.Addr().Is4())
	old := r.Load()
	n, found := remove(old, keyOf(prefix.Addr()), uint8(prefix.Bits()))
	if found {
		r.Store(n)
	}
	return found
}

// RemovePeer deletes every prefix p owns.
func (t *AllowedIPs) RemovePeer(p *Peer) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, is4 := range []bool{true, false} {
		r := t.root(is4)
		n := r.Load()
		var owned []prefixKey
		walk(n, func(m *trieNode) {
			if m.peer == p {
				owned = append(owned, prefixKey{m.key, m.cidr})
			}
		})
		for _, pk := range owned {
			n, _ = remove(n, pk.key, pk.cidr)
		}
		r.Store(n)
	}
}

type prefixKey struct {
	key  ipKey
	cidr uint8
}

// Prefixes returns the prefixes p owns, IPv4 first, each family in trie (address) order.
func (t *AllowedIPs) Prefixes(p *Peer) []netip.Prefix {
	var out []netip.Prefix
	for _, is4 := range []bool{true, false} {
		walk(t.root(is4).Load(), func(n *trieNode) {
			if n.peer == p {
				out = append(out, toPrefix(n.key, n.cidr, is4))
			}
		})
	}
	return out
}

func toPrefix(k ipKey, cidr uint8, is4 bool) netip.Prefix {
	if is4 {
		var b [4]byte
		binary.BigEndian.PutUint32(b[:], uint32(k.hi>>32))
		return netip.PrefixFrom(netip.AddrFrom4(b), int(cidr))
	}
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], k.hi)
	binary.BigEndian.PutUint64(b[8:], k.lo)
	return netip.PrefixFrom(netip.AddrFrom16(b), int(cidr))
}

func walk(n *trieNode, f func(*trieNode)) {
	if n == nil {
		return
	}
	f(n)
	walk(n.child[0], f)
	walk(n.child[1], f)
}

// insert returns a trie equal to n with key/cidr owned by p; n itself is not modified.
func insert(n *trieNode, key ipKey, cidr uint8, p *Peer) *trieNode {
	key = key.mask(cidr)
	if n == nil {
		return &trieNode{key: key, cidr: cidr, peer: p}
	}
	c := min(commonBits(n.key, key), n.cidr, cidr)
	switch {
	case c == n.cidr && c == cidr: // the same prefix: new owner
		m := *n
		m.peer = p
		return &m
	case c == n.cidr: // n's prefix contains the new one: descend
		m := *n
		b := key.bit(n.cidr)
		m.child[b] = insert(n.child[b], key, cidr, p)
		return &m
	case c == cidr: // the new prefix contains n's: it becomes n's parent
		m := &trieNode{key: key, cidr: cidr, peer: p}
		m.child[n.key.bit(cidr)] = n
		return m
	default: // they diverge at bit c: a branching node above both
		m := &trieNode{key: key.mask(c), cidr: c}
		m.child[n.key.bit(c)] = n
		m.child[key.bit(c)] = &trieNode{key: key, cidr: cidr, peer: p}
		return m
	}
}

// remove returns a trie equal to n without key/cidr and whether it was there; n is not modified.
// Nodes left without an owner and with fewer than two children are spliced out, so the trie stays
// path-compressed.
func remove(n *trieNode, key ipKey, cidr uint8) (*trieNode, bool) {
	key = key.mask(cidr)
	if n == nil || n.cidr > cidr || commonBits(n.key, key) < n.cidr {
		return n, false
	}
	m := *n
	if n.cidr == cidr {
		if n.peer == nil {
			return n, false
		}
		m.peer = nil
	} else {
		b := key.bit(n.cidr)
		c, found := remove(n.child[b], key, cidr)
		if !found {
			return n, false
		}
		m.child[b] = c
	}
	if m.peer == nil {
		switch {
		case m.child[0] == nil:
			return m.child[1], true
		case m.child[1] == nil:
			return m.child[0], true
		}
	}
	return &m, true
}
