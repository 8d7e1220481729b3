// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package dataplane_test

import (
	"fmt"
	"net/netip"

	"github.com/wirebatch/wirebatch/dataplane"
	"github.com/wirebatch/wirebatch/kernels"
	"github.com/wirebatch/wirebatch/protocol"
)

// The stages on their own, as an embedder with its own I/O uses them: one PeerSet per side, an
// Encrypter and a Decrypter per worker goroutine, batches in the shape of tun.Device.Read.
func Example_stages() {
	sendKey, recvKey := make([]byte, 32), make([]byte, 32)
	sendKey[0], recvKey[0] = 1, 2

	alice := dataplane.NewPeerSet(nil)
	bob := alice.AddPeer(dataplane.PeerConfig{
		Endpoint:   netip.MustParseAddrPort("192.0.2.2:51820"),
		AllowedIPs: []netip.Prefix{netip.MustParsePrefix("10.0.0.2/32")},
	})
	alice.InstallKeypair(bob, dataplane.KeypairConfig{Suite: kernels.ChaCha20Poly1305,
		SendKey: sendKey, ReceiveKey: recvKey, LocalIndex: 1, RemoteIndex: 2, Initiator: true})

	bobs := dataplane.NewPeerSet(nil)
	aliceAtBob := bobs.AddPeer(dataplane.PeerConfig{AllowedIPs: []netip.Prefix{netip.MustParsePrefix("10.0.0.1/32")}})
	bobs.InstallKeypair(aliceAtBob, dataplane.KeypairConfig{Suite: kernels.ChaCha20Poly1305,
		SendKey: recvKey, ReceiveKey: sendKey, LocalIndex: 2, RemoteIndex: 1, Initiator: true})

	// One IPv4 packet 10.0.0.1 -> 10.0.0.2 at offset 16, room for the tag after it.
	const offset = protocol.TransportHeaderSize
	buf := make([]byte, 2048)
	pkt := buf[offset : offset+28]
	pkt[0], pkt[3] = 0x45, 28
	copy(pkt[12:16], []byte{10, 0, 0, 1})
	copy(pkt[16:20], []byte{10, 0, 0, 2})

	out := dataplane.Packets{Bufs: [][]byte{buf}, Sizes: []int{28}, Offset: offset,
		Addrs: make([]netip.AddrPort, 1), Peers: make([]*dataplane.Peer, 1), Verdicts: make([]dataplane.Verdict, 1)}
	dataplane.NewEncrypter(alice, 1420).Encrypt(out)
	msg := buf[offset-protocol.TransportHeaderSize:][:out.Sizes[0]]
	fmt.Println(out.Verdicts[0], len(msg), "bytes to", out.Addrs[0])

	again := append([]byte(nil), msg...) // the same datagram, delivered twice

	in := dataplane.Packets{Bufs: [][]byte{msg}, Sizes: []int{len(msg)}, Offset: 0,
		Addrs: []netip.AddrPort{out.Addrs[0]}, Peers: make([]*dataplane.Peer, 1), Verdicts: make([]dataplane.Verdict, 1)}
	dataplane.NewDecrypter(bobs).Decrypt(in)
	fmt.Println(in.Verdicts[0], in.Sizes[0], "bytes from", in.Peers[0] == aliceAtBob)

	dataplane.NewDecrypter(bobs).Decrypt(dataplane.Packets{Bufs: [][]byte{again}, Sizes: []int{len(again)},
		Peers: in.Peers, Verdicts: in.Verdicts})
	fmt.Println(in.Verdicts[0])
	// Output:
	// ok 64 bytes to 192.0.2.2:51820
	// ok 28 bytes from true
	// replay
}
