// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package quic

import (
	"bytes"
	"testing"
)

// FuzzOpen feeds Open arbitrary packets, packet-number offsets and largest numbers, seeded with the
// RFC 9001 A.5 packet and a sealed long-header packet. Open must never panic, must fail whatever it
// cannot authenticate (a forgery passes only with negligible probability), must set Err, and must not
// change a packet's length unless it succeeded.
func FuzzOpen(f *testing.F) {
	k, err := NewKeys(Version1, ChaCha20Poly1305, unhex(f, "9ac312a7f877468ebe69422748ad00a15443f18203a07d6060f688f30f21632b"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(unhex(f, "4cfe4189655e5cd55c41f69080575d7999c25a5bfb"), 1, int64(654360563))
	buf := make([]byte, 0, 60)
	buf = append(buf, 0xc1, 0, 0, 0, 1, 4, 1, 2, 3, 4, 0)
	buf = append(buf, bytes.Repeat([]byte{0xaa}, 30)...)
	sealed := []Packet{{Buf: buf, PNOffset: 11, PN: 77}}
	k.Seal(sealed)
	f.Add(sealed[0].Buf, 11, int64(76))
	f.Add([]byte{}, 0, int64(-1))
	f.Fuzz(func(t *testing.T, pkt []byte, pnOffset int, largest int64) {
		if largest < -1 || largest >= maxPN-1 {
			largest = -1
		}
		in := append([]byte(nil), pkt...)
		pkts := []Packet{{Buf: pkt, PNOffset: pnOffset}}
		failed := k.Open(pkts, largest)
		p := pkts[0]
		switch {
		case failed == 0 && p.Err != nil, failed == 1 && p.Err != ErrAuth, failed > 1:
			t.Fatalf("Open returned %d with Err %v", failed, p.Err)
		case failed == 1 && len(p.Buf) != len(in):
			t.Fatalf("a failed Open changed the length from %d to %d", len(in), len(p.Buf))
		case failed == 0 && len(p.Buf) != len(in)-16:
			t.Fatalf("Open succeeded with length %d of %d", len(p.Buf), len(in))
		}
	})
}
