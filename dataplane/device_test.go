// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package dataplane_test

import (
	"bytes"
	"encoding/binary"
	"net/netip"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/wirebatch/wirebatch/dataplane"
	"github.com/wirebatch/wirebatch/dataplane/tuntest"
	"github.com/wirebatch/wirebatch/dataplane/udptest"
	"github.com/wirebatch/wirebatch/kernels"
	"github.com/wirebatch/wirebatch/protocol"
)

// node is one device of a test network with its doubles.
type node struct {
	dev  *dataplane.Device
	tun  *tuntest.TUN
	udp  *udptest.Conn
	cp   *dataplane.StaticKeys
	peer *dataplane.Peer // the other node
	recv chan []byte     // what the device wrote to its TUN
}

var (
	ip4 = [2]netip.Addr{netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.0.2")}
	ip6 = [2]netip.Addr{netip.MustParseAddr("fd00::1"), netip.MustParseAddr("fd00::2")}
	eps = [2]netip.AddrPort{netip.MustParseAddrPort("192.0.2.1:51820"), netip.MustParseAddrPort("[2001:db8::2]:51820")}
)

func key(b byte) []byte { return bytes.Repeat([]byte{b}, 32) }

// newNodes returns two devices connected through an in-memory network, each with a static session
// to the other. deliver, if not nil, replaces the default collection into node.recv.
func newNodes(tb testing.TB, cfg dataplane.Config, deliver [2]func([][]byte)) [2]*node {
	return newNodesConfigs(tb, [2]dataplane.Config{cfg, cfg}, deliver)
}

// newNodesConfigs is newNodes with a configuration of each node's own.
func newNodesConfigs(tb testing.TB, cfgs [2]dataplane.Config, deliver [2]func([][]byte)) [2]*node {
	tb.Helper()
	nw := udptest.NewNetwork()
	var ns [2]*node
	for i := range ns {
		n := &node{cp: &dataplane.StaticKeys{}, recv: make(chan []byte, 4096)}
		d := deliver[i]
		if d == nil {
			d = func(pkts [][]byte) {
				for _, p := range pkts {
					n.recv <- append([]byte{}, p...)
				}
			}
		}
		n.tun = tuntest.New(max(1500, cfgs[i].MTU), 1024, d)
		n.udp = nw.Listen(eps[i], 1024, max(2048, cfgs[i].MTU+64))
		c := cfgs[i]
		c.Handshaker = n.cp
		dev, err := dataplane.NewDevice(n.tun, n.udp, c)
		if err != nil {
			tb.Fatal(err)
		}
		n.dev = dev
		tb.Cleanup(func() { dev.Close() })
		ns[i] = n
	}
	for i, n := range ns {
		o := 1 - i
		p, err := n.cp.AddPeer(dataplane.PeerConfig{
			Endpoint:   eps[o],
			AllowedIPs: []netip.Prefix{netip.PrefixFrom(ip4[o], 32), netip.PrefixFrom(ip6[o], 128)},
		}, dataplane.KeypairConfig{
			Suite: kernels.ChaCha20Poly1305, SendKey: key(byte(1 + i)), ReceiveKey: key(byte(1 + o)),
			LocalIndex: uint32(100 + i), RemoteIndex: uint32(100 + o), Initiator: true,
		})
		if err != nil {
			tb.Fatal(err)
		}
		n.peer = p
	}
	return ns
}

// packet returns an IPv4 or IPv6 UDP-like packet from src to dst of n bytes whose payload carries seq.
func packet(src, dst netip.Addr, n int, seq uint32) []byte {
	hdr := 20
	if src.Is6() {
		hdr = 40
	}
	n = max(n, hdr+4)
	p := make([]byte, n)
	if src.Is4() {
		p[0] = 0x45
		binary.BigEndian.PutUint16(p[2:], uint16(n))
		p[9] = 17
		s, d := src.As4(), dst.As4()
		copy(p[12:], s[:])
		copy(p[16:], d[:])
	} else {
		p[0] = 0x60
		binary.BigEndian.PutUint16(p[4:], uint16(n-40))
		p[6] = 17
		s, d := src.As16(), dst.As16()
		copy(p[8:], s[:])
		copy(p[24:], d[:])
	}
	binary.BigEndian.PutUint32(p[hdr:], seq)
	for i := hdr + 4; i < n; i++ {
		p[i] = byte(seq) + byte(i)
	}
	return p
}

// goroutineLeakCheck fails the test if goroutines started during it are still running at its end.
func goroutineLeakCheck(t *testing.T) {
	before := runtime.NumGoroutine()
	t.Cleanup(func() {
		deadline := time.Now().Add(5 * time.Second)
		for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		if n := runtime.NumGoroutine(); n > before {
			buf := make([]byte, 1<<20)
			buf = buf[:runtime.Stack(buf, true)]
			t.Fatalf("%d goroutines before, %d after Close:\n%s", before, n, buf)
		}
	})
}

func TestTwoDevices(t *testing.T) {
	goroutineLeakCheck(t)
	ns := newNodes(t, dataplane.Config{Workers: 3}, [2]func([][]byte){})
	const count = 2000
	for dir := range 2 {
		src, dst := ns[dir], ns[1-dir]
		var sent [][]byte
		go func() {
			for i := range count {
				var p []byte
				if i%3 == 0 {
					p = packet(ip6[dir], ip6[1-dir], 40+i%1400, uint32(i))
				} else {
					p = packet(ip4[dir], ip4[1-dir], 20+(i*7)%1400, uint32(i))
				}
				if err := src.tun.Send(p); err != nil {
					t.Error(err)
					return
				}
			}
		}()
		for i := range count {
			if i%3 == 0 {
				sent = append(sent, packet(ip6[dir], ip6[1-dir], 40+i%1400, uint32(i)))
			} else {
				sent = append(sent, packet(ip4[dir], ip4[1-dir], 20+(i*7)%1400, uint32(i)))
			}
		}
		// Back-pressure in both doubles means no loss; the reorder stage means order is kept.
		for i := range count {
			select {
			case got := <-dst.recv:
				if !bytes.Equal(got, sent[i]) {
					t.Fatalf("direction %d packet %d: got %x..., want %x...", dir, i, got[:min(48, len(got))], sent[i][:48])
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("direction %d: only %d of %d packets arrived", dir, i, count)
			}
		}
		st := dst.peer.Stats()
		if st.RxPackets != count || st.Dropped() != 0 {
			t.Fatalf("direction %d: receiver's peer stats %+v", dir, st)
		}
		if ev := dst.cp.Events(dst.peer); ev&dataplane.EventDataReceived == 0 {
			t.Fatalf("direction %d: no data-received event (%b)", dir, ev)
		}
	}
	for _, n := range ns {
		if err := n.dev.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

func TestDeviceControlPath(t *testing.T) {
	goroutineLeakCheck(t)
	ns := newNodes(t, dataplane.Config{Workers: 1}, [2]func([][]byte){})
	a, b := ns[0], ns[1]

	// A keepalive arrives, is counted and reported, and is not written to the TUN.
	if err := a.dev.SendKeepalive(a.peer); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "keepalive", func() bool { return b.cp.Events(b.peer)&dataplane.EventKeepaliveReceived != 0 })
	if st := b.peer.Stats(); st.RxPackets != 1 || st.RxBytes != dataplane.Overhead {
		t.Fatalf("after a keepalive: %+v", st)
	}

	// Handshake messages reach the control plane; a malformed one of a handshake type does not.
	init := make([]byte, protocol.InitiationSize)
	init[0] = protocol.TypeInitiation
	if err := a.dev.SendHandshake(eps[1], init); err != nil {
		t.Fatal(err)
	}
	if err := a.dev.SendHandshake(eps[1], init[:100]); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "handshake", func() bool { return b.cp.Handshakes() == 1 && b.dev.Stats().Drops[dataplane.VerdictMalformed] == 1 })

	// A packet to an address nobody owns, and one whose source the receiver does not allow.
	if err := a.tun.Send(packet(ip4[0], netip.MustParseAddr("10.9.9.9"), 100, 0)); err != nil {
		t.Fatal(err)
	}
	b.dev.Peers().AllowedIPs().Remove(netip.PrefixFrom(ip4[0], 32))
	if err := a.tun.Send(packet(ip4[0], ip4[1], 100, 1)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "drops", func() bool {
		return a.dev.Stats().Drops[dataplane.VerdictNoRoute] == 1 && b.peer.Stats().Drops[dataplane.VerdictBadSource] == 1
	})

	// Expiring the keys stops traffic with "no key" and asks for a handshake.
	a.peer.ExpireKeypairs()
	if err := a.tun.Send(packet(ip6[0], ip6[1], 100, 2)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "no key", func() bool {
		return a.peer.Stats().Drops[dataplane.VerdictNoKey] == 1 && a.cp.Events(a.peer)&dataplane.EventNoKeypair != 0
	})
	if err := a.dev.SendKeepalive(a.peer); err != dataplane.ErrNotSent {
		t.Fatalf("keepalive without keys: %v", err)
	}
	select {
	case p := <-b.recv:
		t.Fatalf("B's TUN got a packet: %x", p)
	default:
	}
	a.dev.Close()
	if err := a.dev.SendKeepalive(a.peer); err != dataplane.ErrDeviceClosed {
		t.Fatalf("SendKeepalive after Close: %v", err)
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestDeviceOverload pushes far more than the device can hold while the receiver lags, and checks
// that nothing grows: Close still returns, nothing leaks, and the heap stays bounded.
func TestDeviceOverload(t *testing.T) {
	goroutineLeakCheck(t)
	var mu sync.Mutex
	slow := func(pkts [][]byte) { // a receiver that lags
		mu.Lock()
		time.Sleep(50 * time.Microsecond)
		mu.Unlock()
	}
	ns := newNodes(t, dataplane.Config{Workers: 2, Batches: 3}, [2]func([][]byte){nil, slow})
	pkt := packet(ip4[0], ip4[1], 1420, 0)
	var before, after runtime.MemStats
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ns[0].tun.Send(pkt) == nil {
		}
	}()
	time.Sleep(100 * time.Millisecond)
	runtime.GC()
	runtime.ReadMemStats(&before)
	time.Sleep(300 * time.Millisecond)
	runtime.GC()
	runtime.ReadMemStats(&after)
	if growth := int64(after.HeapInuse) - int64(before.HeapInuse); growth > 1<<20 {
		t.Errorf("heap grew by %d bytes under sustained overload", growth)
	}
	for _, n := range ns {
		n.dev.Close()
	}
	<-done
	if ns[1].peer.Stats().RxPackets == 0 {
		t.Error("nothing got through")
	}
}
