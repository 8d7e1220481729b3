// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package dataplane_test

import (
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/wirebatch/wirebatch/dataplane"
	"github.com/wirebatch/wirebatch/dataplane/tuntest"
	"github.com/wirebatch/wirebatch/dataplane/udptest"
	"github.com/wirebatch/wirebatch/kernels"
	"github.com/wirebatch/wirebatch/protocol"
)

// installingCP installs a keypair from PeerEvent as soon as a peer reports EventNoKeypair, as a
// control plane whose handshake completed at once would: the installation then comes before the
// sender stages the packet that caused the event.
type installingCP struct {
	dataplane.StaticKeys
	dev  *dataplane.Device
	once sync.Once
}

func (c *installingCP) Attach(d *dataplane.Device) { c.dev = d; c.StaticKeys.Attach(d) }

func (c *installingCP) PeerEvent(p *dataplane.Peer, ev dataplane.Event) {
	c.StaticKeys.PeerEvent(p, ev)
	if ev&dataplane.EventNoKeypair != 0 {
		c.once.Do(func() {
			c.dev.InstallKeypair(p, dataplane.KeypairConfig{Suite: kernels.ChaCha20Poly1305, SendKey: key(1), ReceiveKey: key(2),
				LocalIndex: 200, RemoteIndex: 101, Initiator: true})
		})
	}
}

// TestDeviceStagingBeforeInstall: a packet staged after the keypair that can send it was installed
// still leaves.
func TestDeviceStagingBeforeInstall(t *testing.T) {
	goroutineLeakCheck(t)
	nw := udptest.NewNetwork()
	cp := &installingCP{}
	tun := tuntest.New(1500, 16, nil)
	dev, err := dataplane.NewDevice(tun, nw.Listen(eps[0], 64, 2048), dataplane.Config{Workers: 1, Handshaker: cp})
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	peer := nw.Listen(eps[1], 64, 2048)
	defer peer.Close()
	dev.AddPeer(dataplane.PeerConfig{Endpoint: eps[1], AllowedIPs: []netip.Prefix{netip.PrefixFrom(ip4[1], 32)}})
	if err := tun.Send(packet(ip4[0], ip4[1], 60, 1)); err != nil {
		t.Fatal(err)
	}
	timeout := time.AfterFunc(5*time.Second, func() { peer.Close() })
	defer timeout.Stop()
	bufs, sizes, srcs := [][]byte{make([]byte, 2048)}, make([]int, 1), make([]netip.AddrPort, 1)
	if _, err := peer.ReadBatch(bufs, sizes, srcs); err != nil {
		t.Fatalf("the staged packet never left: %v; %+v", err, dev.Stats())
	}
	if dataplane.MessageType(bufs[0][:sizes[0]]) != protocol.TypeTransport || sizes[0] < 60+dataplane.Overhead {
		t.Fatalf("got a %d-byte datagram of type %d, want the packet as a transport message", sizes[0], dataplane.MessageType(bufs[0][:sizes[0]]))
	}
}
