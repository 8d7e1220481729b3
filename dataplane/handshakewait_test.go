// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package dataplane_test

import (
	"bytes"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wirebatch/wirebatch/dataplane"
	"github.com/wirebatch/wirebatch/dataplane/tuntest"
	"github.com/wirebatch/wirebatch/dataplane/udptest"
	"github.com/wirebatch/wirebatch/kernels"
	"github.com/wirebatch/wirebatch/protocol"
)

// expectPackets reads want's packets from n's TUN, in order.
func expectPackets(t *testing.T, n *node, want [][]byte) {
	t.Helper()
	for i, w := range want {
		select {
		case got := <-n.recv:
			if !bytes.Equal(got, w) {
				t.Fatalf("packet %d: got %x..., want %x...", i, got[:min(28, len(got))], w[:28])
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("packet %d of %d did not arrive", i, len(want))
		}
	}
}

// TestDeviceStaging: packets without a keypair wait (the newest MaxStaged of them) and leave when a
// keypair we initiated is installed, or when the initiator confirms a keypair we responded with.
func TestDeviceStaging(t *testing.T) {
	goroutineLeakCheck(t)
	ns := newNodes(t, dataplane.Config{Workers: 2}, [2]func([][]byte){})
	a, b := ns[0], ns[1]
	chacha := kernels.ChaCha20Poly1305

	a.peer.ExpireKeypairs()
	const n = dataplane.MaxStaged + 8
	var pkts [][]byte
	for i := range n {
		p := packet(ip4[0], ip4[1], 60+i, uint32(i))
		pkts = append(pkts, p)
		if err := a.tun.Send(p); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "staging", func() bool { st := a.dev.Stats(); return st.Staged == n && st.StagedDropped == n-dataplane.MaxStaged })
	select {
	case p := <-b.recv:
		t.Fatalf("a packet left without a keypair: %x", p)
	default:
	}
	// As initiator: the new keypair sends the staged packets at once. B still holds the matching
	// session (index 101, A's send key), which has not received anything yet.
	if _, err := a.dev.InstallKeypair(a.peer, dataplane.KeypairConfig{Suite: chacha, SendKey: key(1), ReceiveKey: key(2),
		LocalIndex: 200, RemoteIndex: 101, Initiator: true}); err != nil {
		t.Fatal(err)
	}
	expectPackets(t, b, pkts[n-dataplane.MaxStaged:])

	// As responder: staged packets wait for B's first message on the new session.
	a.peer.ExpireKeypairs()
	pkts = pkts[:0]
	for i := range 3 {
		p := packet(ip6[0], ip6[1], 100, uint32(100+i))
		pkts = append(pkts, p)
		if err := a.tun.Send(p); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "staging", func() bool { return a.dev.Stats().Staged == n+3 })
	if _, err := a.dev.InstallKeypair(a.peer, dataplane.KeypairConfig{Suite: chacha, SendKey: key(8), ReceiveKey: key(9),
		LocalIndex: 300, RemoteIndex: 301}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.dev.InstallKeypair(b.peer, dataplane.KeypairConfig{Suite: chacha, SendKey: key(9), ReceiveKey: key(8),
		LocalIndex: 301, RemoteIndex: 300, Initiator: true}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond)
	select {
	case p := <-b.recv:
		t.Fatalf("a staged packet left before the responder's keypair was confirmed: %x", p)
	default:
	}
	fromB := packet(ip4[1], ip4[0], 80, 7)
	if err := b.tun.Send(fromB); err != nil {
		t.Fatal(err)
	}
	expectPackets(t, a, [][]byte{fromB})
	expectPackets(t, b, pkts)
	if ev := a.cp.Events(a.peer); ev&dataplane.EventKeypairConfirmed == 0 {
		t.Errorf("no EventKeypairConfirmed (%b)", ev)
	}

	// DropStaged empties the queue.
	a.peer.ExpireKeypairs()
	if err := a.tun.Send(pkts[0]); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "staging", func() bool { return a.dev.Stats().Staged == n+4 })
	a.dev.DropStaged(a.peer)
	if st := a.dev.Stats(); st.StagedDropped != n-dataplane.MaxStaged+1 {
		t.Errorf("StagedDropped %d after DropStaged", st.StagedDropped)
	}
}

// initiatingCP sends a handshake initiation from PeerEvent when a peer has no keypair, as a real
// control plane does, and once also tries a keepalive: the Device must not hold a lock those need
// while it reports.
type initiatingCP struct {
	dataplane.StaticKeys
	dev       *dataplane.Device
	keepalive atomic.Bool
}

func (c *initiatingCP) Attach(d *dataplane.Device) { c.dev = d; c.StaticKeys.Attach(d) }

func (c *initiatingCP) PeerEvent(p *dataplane.Peer, ev dataplane.Event) {
	c.StaticKeys.PeerEvent(p, ev)
	if ev&dataplane.EventNoKeypair != 0 {
		msg := make([]byte, protocol.InitiationSize)
		msg[0] = protocol.TypeInitiation
		c.dev.SendHandshake(p.Endpoint(), msg)
		if c.keepalive.CompareAndSwap(false, true) {
			c.dev.SendKeepalive(p) // no keypair: reports EventNoKeypair again, from here
		}
	}
}

func TestControlPlaneCallsBack(t *testing.T) {
	goroutineLeakCheck(t)
	nw := udptest.NewNetwork()
	b := &dataplane.StaticKeys{}
	devB, err := dataplane.NewDevice(tuntest.New(1500, 16, nil), nw.Listen(eps[1], 64, 2048), dataplane.Config{Workers: 1, Handshaker: b})
	if err != nil {
		t.Fatal(err)
	}
	defer devB.Close()
	a := &initiatingCP{}
	tunA := tuntest.New(1500, 16, nil)
	devA, err := dataplane.NewDevice(tunA, nw.Listen(eps[0], 64, 2048), dataplane.Config{Workers: 1, Handshaker: a})
	if err != nil {
		t.Fatal(err)
	}
	defer devA.Close()
	p := devA.AddPeer(dataplane.PeerConfig{Endpoint: eps[1], AllowedIPs: []netip.Prefix{netip.PrefixFrom(ip4[1], 32)}})

	done := make(chan error)
	go func() { done <- devA.SendKeepalive(p) }()
	select {
	case err := <-done:
		if err != dataplane.ErrNotSent {
			t.Fatalf("SendKeepalive without a keypair: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("SendKeepalive deadlocked with a control plane that calls back")
	}
	if err := tunA.Send(packet(ip4[0], ip4[1], 60, 0)); err != nil { // from a worker this time
		t.Fatal(err)
	}
	waitFor(t, "handshakes", func() bool { return b.Handshakes() == 3 })
}
