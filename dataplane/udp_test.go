// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package dataplane_test

import (
	"bytes"
	"net/netip"
	"testing"
	"time"

	"github.com/wirebatch/wirebatch/dataplane"
	"github.com/wirebatch/wirebatch/dataplane/tuntest"
	"github.com/wirebatch/wirebatch/kernels"
	"github.com/wirebatch/wirebatch/udp"
)

// udp.Conn is the real socket a Device runs on, with both fast paths.
var (
	_ dataplane.UDP             = (*udp.Conn)(nil)
	_ dataplane.UDPBufferReader = (*udp.Conn)(nil)
	_ dataplane.UDPSendReporter = (*udp.Conn)(nil)
)

// TestTwoDevicesRealUDP runs two devices over loopback sockets, IPv4 inside and out.
func TestTwoDevicesRealUDP(t *testing.T) {
	goroutineLeakCheck(t)
	var udps [2]*udp.Conn
	for i := range udps {
		u, err := udp.Listen(netip.MustParseAddrPort("127.0.0.1:0"))
		if err != nil {
			t.Skipf("no loopback socket: %v", err)
		}
		udps[i] = u
	}
	recv := make(chan []byte, 100)
	var devs [2]*dataplane.Device
	var cps [2]*dataplane.StaticKeys
	var tuns [2]*tuntest.TUN
	for i := range devs {
		cps[i] = &dataplane.StaticKeys{}
		tuns[i] = tuntest.New(1500, 64, func(pkts [][]byte) {
			for _, p := range pkts {
				recv <- append([]byte{}, p...)
			}
		})
		d, err := dataplane.NewDevice(tuns[i], udps[i], dataplane.Config{Workers: 1, Handshaker: cps[i]})
		if err != nil {
			t.Fatal(err)
		}
		devs[i] = d
	}
	for i := range devs {
		o := 1 - i
		if _, err := cps[i].AddPeer(dataplane.PeerConfig{Endpoint: udps[o].LocalAddr(), AllowedIPs: []netip.Prefix{netip.PrefixFrom(ip4[o], 32)}},
			dataplane.KeypairConfig{Suite: kernels.ChaCha20Poly1305, SendKey: key(byte(i + 1)), ReceiveKey: key(byte(o + 1)),
				LocalIndex: uint32(i), RemoteIndex: uint32(o), Initiator: true}); err != nil {
			t.Fatal(err)
		}
	}
	for dir := range 2 {
		p := packet(ip4[dir], ip4[1-dir], 500, uint32(dir))
		// Loopback UDP may drop under load: resend until one arrives.
		deadline := time.Now().Add(5 * time.Second)
	wait:
		for {
			if err := tuns[dir].Send(p); err != nil {
				t.Fatal(err)
			}
			select {
			case got := <-recv:
				if !bytes.Equal(got, p) {
					t.Fatalf("direction %d: got %x", dir, got)
				}
				break wait
			case <-time.After(100 * time.Millisecond):
				if time.Now().After(deadline) {
					t.Fatalf("direction %d: nothing arrived", dir)
				}
			}
		}
	}
	for _, d := range devs {
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
