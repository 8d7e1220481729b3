// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package dataplane_test

import (
	"net/netip"
	"testing"

	"github.com/wirebatch/wirebatch/dataplane"
	"github.com/wirebatch/wirebatch/dataplane/tuntest"
	"github.com/wirebatch/wirebatch/kernels"
	"github.com/wirebatch/wirebatch/udp"
)

// TestDeviceUnreachablePeer: a device on a real UDP socket with two peers, C behind a destination
// the kernel refuses and B on loopback. Traffic to both, interleaved in the same batches: B gets
// every datagram, and C's refused datagrams are counted on C (Stats.TxErrors), not as sent only.
func TestDeviceUnreachablePeer(t *testing.T) {
	conn, err := udp.Listen(netip.MustParseAddrPort("127.0.0.1:0"))
	if err != nil {
		t.Skipf("no IPv4 loopback socket: %v", err)
	}
	sink, err := udp.Listen(netip.MustParseAddrPort("127.0.0.1:0"))
	if err != nil {
		t.Fatal(err)
	}
	defer sink.Close()
	tun := tuntest.New(1500, 1024, func([][]byte) {})
	cp := &dataplane.StaticKeys{}
	dev, err := dataplane.NewDevice(tun, conn, dataplane.Config{Workers: 2, Handshaker: cp})
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	ipB, ipC := netip.MustParseAddr("10.0.0.2"), netip.MustParseAddr("10.0.0.3")
	addPeer := func(ep netip.AddrPort, ip netip.Addr, idx uint32) *dataplane.Peer {
		p, err := cp.AddPeer(dataplane.PeerConfig{Endpoint: ep, AllowedIPs: []netip.Prefix{netip.PrefixFrom(ip, 32)}},
			dataplane.KeypairConfig{Suite: kernels.ChaCha20Poly1305, SendKey: key(byte(idx)), ReceiveKey: key(byte(idx + 1)),
				LocalIndex: idx, RemoteIndex: idx + 100, Initiator: true})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	b := addPeer(sink.LocalAddr(), ipB, 10)
	c := addPeer(netip.MustParseAddrPort("240.0.0.1:51820"), ipC, 20) // class E: refused
	const count = 300
	go func() {
		for i := range count {
			dst := ipB
			if i%2 == 1 {
				dst = ipC
			}
			if err := tun.Send(packet(netip.MustParseAddr("10.0.0.1"), dst, 100, uint32(i))); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	got := 0
	bufs := make([][]byte, 64)
	for i := range bufs {
		bufs[i] = make([]byte, 2048)
	}
	sizes, srcs := make([]int, 64), make([]netip.AddrPort, 64)
	for got < count/2 {
		n, err := sink.ReadBatch(bufs, sizes, srcs)
		if err != nil {
			t.Fatal(err)
		}
		got += n
	}
	waitFor(t, "C's refused datagrams to be counted", func() bool { return c.Stats().TxErrors == count/2 })
	if st := b.Stats(); st.TxErrors != 0 || st.TxPackets != count/2 {
		t.Fatalf("B: %+v", st)
	}
	if st := dev.Stats(); st.TxErrors != count/2 || st.WriteErrors != count/2 {
		t.Fatalf("device: TxErrors %d, WriteErrors %d; want %d", st.TxErrors, st.WriteErrors, count/2)
	}
}
