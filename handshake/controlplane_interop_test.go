// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package handshake_test

// The ControlPlane against wireguard-go in process: a golang.zx2c4.com/wireguard/device.Device on a
// tun/tuntest ChannelTUN and a conn.Bind double (bridgeBind) attached to the same udptest network as
// our dataplane Device. Either side initiates; traffic must then flow both ways.

import (
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"sync"
	"testing"
	"time"

	"golang.zx2c4.com/wireguard/conn"
	"golang.zx2c4.com/wireguard/device"
	"golang.zx2c4.com/wireguard/tun/tuntest"

	"github.com/wirebatch/wirebatch/dataplane/udptest"
	"github.com/wirebatch/wirebatch/handshake"
)

// bridgeBind is a conn.Bind on a udptest network: wireguard-go's datagrams go through the same
// in-memory network as our Device's.
type bridgeBind struct {
	nw   *udptest.Network
	addr netip.AddrPort

	mu sync.Mutex
	c  *udptest.Conn // nil while closed
}

// bridgeEndpoint is a conn.Endpoint: a destination address on the udptest network.
type bridgeEndpoint netip.AddrPort

func (e bridgeEndpoint) ClearSrc()           {}
func (e bridgeEndpoint) SrcToString() string { return "" }
func (e bridgeEndpoint) DstToString() string { return netip.AddrPort(e).String() }
func (e bridgeEndpoint) DstToBytes() []byte {
	b, _ := netip.AddrPort(e).MarshalBinary()
	return b
}
func (e bridgeEndpoint) DstIP() netip.Addr { return netip.AddrPort(e).Addr() }
func (e bridgeEndpoint) SrcIP() netip.Addr { return netip.Addr{} }

func (b *bridgeBind) Open(uint16) ([]conn.ReceiveFunc, uint16, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.c != nil {
		return nil, 0, conn.ErrBindAlreadyOpen
	}
	c := b.nw.Listen(b.addr, 1024, 2048)
	b.c = c
	var srcs [udptest.BatchSize]netip.AddrPort
	receive := func(bufs [][]byte, sizes []int, eps []conn.Endpoint) (int, error) {
		n, err := c.ReadBatch(bufs, sizes, srcs[:min(len(bufs), len(srcs))])
		if errors.Is(err, os.ErrClosed) {
			return 0, net.ErrClosed // what wireguard-go's receive loop stops on
		}
		for i := range n {
			eps[i] = bridgeEndpoint(srcs[i])
		}
		return n, err
	}
	return []conn.ReceiveFunc{receive}, b.addr.Port(), nil
}

func (b *bridgeBind) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.c == nil {
		return nil
	}
	err := b.c.Close()
	b.c = nil
	return err
}

func (b *bridgeBind) SetMark(uint32) error { return nil }
func (b *bridgeBind) BatchSize() int       { return udptest.BatchSize }

func (b *bridgeBind) Send(bufs [][]byte, ep conn.Endpoint) error {
	b.mu.Lock()
	c := b.c
	b.mu.Unlock()
	if c == nil {
		return net.ErrClosed
	}
	dst, ok := ep.(bridgeEndpoint)
	if !ok {
		return conn.ErrWrongEndpointType
	}
	dsts := make([]netip.AddrPort, len(bufs))
	for i := range dsts {
		dsts[i] = netip.AddrPort(dst)
	}
	return c.WriteBatch(bufs, dsts)
}

func (b *bridgeBind) ParseEndpoint(s string) (conn.Endpoint, error) {
	ap, err := netip.ParseAddrPort(s)
	return bridgeEndpoint(ap), err
}

// wgNode is wireguard-go on the udptest network.
type wgNode struct {
	udp netip.AddrPort
	ip  netip.Addr
	tun *tuntest.ChannelTUN
	got *arrivals
}

// newWGNode starts wireguard-go with key, knowing our node as its peer (at ourEndpoint, unless that
// is the zero value: then it learns our address from our initiation).
func newWGNode(t *testing.T, nw *udptest.Network, key handshake.PrivateKey, ours *cpNode, ourEndpoint netip.AddrPort) *wgNode {
	t.Helper()
	w := &wgNode{
		udp: netip.MustParseAddrPort("127.0.0.2:51820"),
		ip:  wgTunnelIP,
		tun: tuntest.NewChannelTUN(),
		got: newArrivals(),
	}
	dev := device.NewDevice(w.tun.TUN(), &bridgeBind{nw: nw, addr: w.udp}, device.NewLogger(device.LogLevelError, "wireguard-go: "))
	pub := ours.key.PublicKey()
	config := fmt.Sprintf("private_key=%s\npublic_key=%s\nallowed_ip=%s/32\n",
		hex.EncodeToString(key[:]), hex.EncodeToString(pub[:]), ours.ip)
	if ourEndpoint.IsValid() {
		config += fmt.Sprintf("endpoint=%s\n", ourEndpoint)
	}
	if err := dev.IpcSet(config); err != nil {
		t.Fatalf("IpcSet: %v", err)
	}
	if err := dev.Up(); err != nil {
		t.Fatal(err)
	}
	// ChannelTUN's Write blocks until Inbound is read: drain it for as long as the device lives.
	stop := make(chan struct{})
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		for {
			select {
			case p := <-w.tun.Inbound:
				w.got.add(p)
			case <-stop:
				return
			}
		}
	}()
	t.Cleanup(func() {
		dev.Close()
		close(stop)
		<-drained
	})
	return w
}

func (w *wgNode) send(dst netip.Addr, from, to uint64) {
	for seq := from; seq < to; seq++ {
		w.tun.Outbound <- seqPacket(w.ip, dst, seq)
	}
}

// TestControlPlaneWireGuardGo: our ControlPlane and wireguard-go complete a handshake, whichever side
// initiates, each side knowing the other's endpoint or learning it from the handshake, and then
// carry traffic both ways with every packet delivered.
func TestControlPlaneWireGuardGo(t *testing.T) {
	for _, weInitiate := range []bool{true, false} {
		name := map[bool]string{true: "we initiate", false: "wireguard-go initiates"}[weInitiate]
		t.Run(name, func(t *testing.T) {
			nw := udptest.NewNetwork()
			ours := newCPNode(t, nw, netip.MustParseAddrPort("127.0.0.1:51820"), ourTunnelIP, handshake.Limits{})
			wgKey := mustKey(t)
			// Only the initiator is told the responder's endpoint: the responder learns the
			// initiator's from its authenticated initiation (roaming, paper section 2.1).
			var ourEndpoint, wgEndpoint netip.AddrPort
			if weInitiate {
				wgEndpoint = netip.MustParseAddrPort("127.0.0.2:51820")
			} else {
				ourEndpoint = ours.udp
			}
			wg := newWGNode(t, nw, wgKey, ours, ourEndpoint)
			ours.connect(t, wg.ip, wgKey.PublicKey(), wgEndpoint)

			if weInitiate {
				// Our first packet starts the handshake, waits for it (staged by the data
				// plane) and confirms the session to wireguard-go.
				ours.send(t, wg.ip, 1<<32, 1<<32+1)
				waitUntil(t, 3*time.Second, "our first packet arrived", func() bool {
					return wg.got.has(1 << 32)
				}, ours.describe)
				if !ours.peer.Current().Initiator() {
					t.Fatal("wireguard-go initiated")
				}
			} else {
				// wireguard-go queues its first packet during the handshake and sends it after:
				// it is the message that confirms our responder's keypair.
				wg.send(ours.ip, 1<<32, 1<<32+1)
				waitUntil(t, 3*time.Second, "wireguard-go's first packet arrived", func() bool {
					return ours.got.has(1 << 32)
				}, ours.describe)
				if cur := ours.peer.Current(); cur == nil || cur.Initiator() {
					t.Fatal("we should hold a confirmed responder keypair")
				}
				if got := ours.peer.Endpoint(); got != wg.udp {
					t.Fatalf("our peer's endpoint is %v, want wireguard-go's %v learnt from its initiation", got, wg.udp)
				}
			}

			const n = 500
			var both sync.WaitGroup
			both.Add(2)
			go func() { defer both.Done(); ours.send(t, wg.ip, 0, n) }()
			go func() { defer both.Done(); wg.send(ours.ip, 0, n) }()
			both.Wait()
			var dOurs, dWG int
			waitUntil(t, 5*time.Second, "every packet arrived", func() bool {
				dOurs, _ = ours.got.counts(n)
				dWG, _ = wg.got.counts(n)
				return dOurs == n && dWG == n
			}, ours.describe, func() string { return fmt.Sprintf("we got %d, wireguard-go got %d of %d", dOurs, dWG, n) })
			if ours.cp.KeypairsInstalled() != 1 {
				t.Errorf("%d keypairs installed, want 1", ours.cp.KeypairsInstalled())
			}
			if st := ours.dev.Stats(); st.Dropped() != st.Staged || st.StagedDropped != 0 {
				t.Errorf("dropped %v, staged %d, dropped from the stage %d", st.Drops, st.Staged, st.StagedDropped)
			}
		})
	}
}

// TestControlPlaneWireGuardGoRekey: we initiate and rekey every 300 ms (REKEY_AFTER_TIME shortened;
// wireguard-go responds with its own defaults) while packets stream both ways; none may be lost.
func TestControlPlaneWireGuardGoRekey(t *testing.T) {
	nw := udptest.NewNetwork()
	cfg := handshake.Limits{RekeyAfterTime: 300 * time.Millisecond, RekeyTimeout: 100 * time.Millisecond}
	ours := newCPNode(t, nw, netip.MustParseAddrPort("127.0.0.1:51820"), ourTunnelIP, cfg)
	wgKey := mustKey(t)
	wg := newWGNode(t, nw, wgKey, ours, netip.AddrPort{})
	ours.connect(t, wg.ip, wgKey.PublicKey(), wg.udp)
	ours.send(t, wg.ip, 1<<32, 1<<32+1)
	waitUntil(t, 3*time.Second, "our first packet arrived", func() bool { return wg.got.has(1 << 32) }, ours.describe)
	first := ours.peer.Current()
	drops := ours.dev.Stats().Dropped()

	const n = 1500
	paced(n, func(seq uint64) { ours.send(t, wg.ip, seq, seq+1) }, func(seq uint64) { wg.send(ours.ip, seq, seq+1) })
	var dOurs, dWG int
	waitUntil(t, 5*time.Second, "every packet arrived", func() bool {
		dOurs, _ = ours.got.counts(n)
		dWG, _ = wg.got.counts(n)
		return dOurs == n && dWG == n
	}, ours.describe, func() string { return fmt.Sprintf("we got %d, wireguard-go got %d of %d", dOurs, dWG, n) })
	if got := ours.dev.Stats().Dropped() - drops; got != 0 {
		t.Errorf("we dropped %d packets during the rekeys: %v", got, ours.dev.Stats().Drops)
	}
	if ours.peer.Current() == first || ours.cp.KeypairsInstalled() < 3 {
		t.Errorf("%d keypairs installed, want rekeys (at least 3)", ours.cp.KeypairsInstalled())
	}
	t.Logf("%d packets each way over %d keypairs", n, ours.cp.KeypairsInstalled())
}
