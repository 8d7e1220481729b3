// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package dataplane

import "net/netip"

// Packets is a batch as the stages see it, in the shape of tun.Device.Read: packet i, for
// i < len(Bufs), is Bufs[i][Offset : Offset+Sizes[i]], and len(Bufs[i]) is all the buffer the stage may
// use. Sizes, Verdicts and Peers must be at least len(Bufs) long; Addrs may be nil.
//
// The headroom before Offset and the tailroom after the packet are what make encapsulation in place
// possible: see Encrypter.Encrypt and Decrypter.Decrypt for the exact rules.
type Packets struct {
	Bufs     [][]byte
	Sizes    []int
	Offset   int
	Addrs    []netip.AddrPort // decrypt: the datagrams' sources (in); encrypt: the peers' endpoints (out)
	Peers    []*Peer          // the packets' peers (out; nil where unknown); encrypt: a keepalive's peer (in)
	Verdicts []Verdict        // out
}

// sub returns packets [i, j) of p.
func (p *Packets) sub(i, j int) Packets {
	q := Packets{Bufs: p.Bufs[i:j], Sizes: p.Sizes[i:j], Offset: p.Offset, Peers: p.Peers[i:j], Verdicts: p.Verdicts[i:j]}
	if p.Addrs != nil {
		q.Addrs = p.Addrs[i:j]
	}
	return q
}
