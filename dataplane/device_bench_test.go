// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package dataplane_test

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/crypto/curve25519"
	"golang.zx2c4.com/wireguard/conn"
	"golang.zx2c4.com/wireguard/conn/bindtest"
	"golang.zx2c4.com/wireguard/device"
	wgtuntest "golang.zx2c4.com/wireguard/tun/tuntest"

	"github.com/wirebatch/wirebatch/dataplane"
	"github.com/wirebatch/wirebatch/dataplane/tuntest"
	"github.com/wirebatch/wirebatch/kernels"
	"github.com/wirebatch/wirebatch/udp"
)

// The whole in-memory two-device path: packets injected into A's TUN, encrypted, carried to B,
// decrypted and written to B's TUN, as many as b.N, timed from the first arrival to the last (as
// wireguard-go's own BenchmarkThroughput does). wireguard-go's device runs beside it in the same run,
// on its own doubles (tun/tuntest's ChannelTUN, conn/bindtest's ChannelBinds), driven the same way:
// one goroutine injecting one packet per call as fast as the TUN takes it. packet-loss is the share of
// the packets injected that had not arrived when the b.N-th did (in flight, or dropped), as in
// wireguard-go's benchmark.
//
//	go test -run '^$' -bench TwoDevice ./dataplane/

const benchPacket = 1420

func BenchmarkTwoDevice(b *testing.B) {
	b.Run("wirebatch", benchWirebatch)
	b.Run("wireguard-go", func(b *testing.B) { benchWireguardGo(b, false) })
}

// BenchmarkTwoDeviceLoopback is the same over real UDP sockets on 127.0.0.1 (sendmmsg/recvmmsg, GSO
// and GRO where the kernel has them, on both sides: wireguard-go's conn.StdNetBind uses them too).
// Real UDP drops what the receiver cannot take, so the sender's surplus shows as packet-loss.
func BenchmarkTwoDeviceLoopback(b *testing.B) {
	b.Run("wirebatch", benchWirebatchLoopback)
	b.Run("wireguard-go", func(b *testing.B) { benchWireguardGo(b, true) })
}

func reportRate(b *testing.B, elapsed time.Duration) {
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "pkts/s")
	b.ReportMetric(float64(elapsed.Nanoseconds())/float64(b.N), "ns/pkt")
}

func benchWirebatch(b *testing.B) {
	ns := newNodes(b, dataplane.Config{}, [2]func([][]byte){nil, nil})
	runWirebatch(b, ns[0].tun, ns[1].tun.SetDeliver, func() {
		for _, n := range ns {
			n.dev.Close()
		}
	})
}

func benchWirebatchLoopback(b *testing.B) {
	var udps [2]*udp.Conn
	for i := range udps {
		u, err := udp.Listen(netip.MustParseAddrPort("127.0.0.1:0"))
		if err != nil {
			b.Skipf("no loopback socket: %v", err)
		}
		udps[i] = u
	}
	var tuns [2]*tuntest.TUN
	var devs [2]*dataplane.Device
	for i := range devs {
		cp := &dataplane.StaticKeys{}
		tuns[i] = tuntest.New(1500, 1024, nil)
		d, err := dataplane.NewDevice(tuns[i], udps[i], dataplane.Config{Handshaker: cp})
		if err != nil {
			b.Fatal(err)
		}
		devs[i] = d
		o := 1 - i
		if _, err := cp.AddPeer(dataplane.PeerConfig{Endpoint: udps[o].LocalAddr(), AllowedIPs: []netip.Prefix{netip.PrefixFrom(ip4[o], 32)}},
			dataplane.KeypairConfig{Suite: kernels.ChaCha20Poly1305, SendKey: key(byte(i + 1)), ReceiveKey: key(byte(o + 1)),
				LocalIndex: uint32(i), RemoteIndex: uint32(o), Initiator: true}); err != nil {
			b.Fatal(err)
		}
	}
	runWirebatch(b, tuns[0], tuns[1].SetDeliver, func() {
		for _, d := range devs {
			d.Close()
		}
	})
}

// runWirebatch injects packets into src until b.N have been delivered through setDeliver's hook.
func runWirebatch(b *testing.B, src *tuntest.TUN, setDeliver func(func([][]byte)), closeAll func()) {
	var got atomic.Int64
	var start time.Time
	done := make(chan struct{})
	target := int64(b.N)
	count := func(pkts [][]byte) {
		n := got.Add(int64(len(pkts)))
		if n == int64(len(pkts)) {
			start = time.Now()
		}
		if n >= target && n-int64(len(pkts)) < target {
			close(done)
		}
	}
	setDeliver(count)
	pkt := packet(ip4[0], ip4[1], benchPacket, 1)
	b.SetBytes(benchPacket)
	b.ReportAllocs()
	b.ResetTimer()
	var sent int64
	go func() {
		for {
			select {
			case <-done:
				return
			default:
			}
			if src.Send(pkt) != nil {
				return
			}
			atomic.AddInt64(&sent, 1)
		}
	}()
	<-done
	elapsed := time.Since(start)
	b.StopTimer()
	reportRate(b, elapsed)
	b.ReportMetric(1-float64(b.N)/float64(atomic.LoadInt64(&sent)), "packet-loss")
	closeAll()
}

func benchWireguardGo(b *testing.B, realSockets bool) {
	var priv [2][32]byte
	var pub [2][]byte
	for i := range priv {
		if _, err := rand.Read(priv[i][:]); err != nil {
			b.Fatal(err)
		}
		var err error
		if pub[i], err = curve25519.X25519(priv[i][:], curve25519.Basepoint); err != nil {
			b.Fatal(err)
		}
	}
	binds := bindtest.NewChannelBinds()
	// bindtest: bind 0 reaches bind 1 at port 1, bind 1 reaches bind 0 at port 2.
	ports := [2]int{2, 1}
	if realSockets {
		for i := range binds {
			binds[i] = conn.NewDefaultBind()
			ports[i] = freePort(b)
		}
	}
	var tuns [2]*wgtuntest.ChannelTUN
	var devs [2]*device.Device
	addrs := [2]netip.Addr{netip.MustParseAddr("1.0.0.1"), netip.MustParseAddr("1.0.0.2")}
	for i := range devs {
		o := 1 - i
		tuns[i] = wgtuntest.NewChannelTUN()
		devs[i] = device.NewDevice(tuns[i].TUN(), binds[i], device.NewLogger(device.LogLevelError, ""))
		cfg := fmt.Sprintf("private_key=%s\nlisten_port=%d\nreplace_peers=true\npublic_key=%s\nprotocol_version=1\nreplace_allowed_ips=true\nallowed_ip=%s/32\nendpoint=127.0.0.1:%d\n",
			hex.EncodeToString(priv[i][:]), ports[i], hex.EncodeToString(pub[o]), addrs[o], ports[o])
		if !realSockets {
			cfg = strings.Replace(cfg, fmt.Sprintf("listen_port=%d", ports[i]), "listen_port=0", 1)
		}
		if err := devs[i].IpcSet(cfg); err != nil {
			b.Fatal(err)
		}
		if err := devs[i].Up(); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(devs[i].Close)
	}
	// Complete the handshake with one packet each way.
	for i := range 2 {
		tuns[i].Outbound <- wgtuntest.Ping(addrs[1-i], addrs[i])
		select {
		case <-tuns[1-i].Inbound:
		case <-time.After(10 * time.Second):
			b.Fatal("wireguard-go: no handshake")
		}
	}
	pkt := packet(addrs[0], addrs[1], benchPacket, 1)
	var got atomic.Int64
	var elapsed time.Duration
	done := make(chan struct{})
	go func() {
		var start time.Time
		for range tuns[1].Inbound {
			n := got.Add(1)
			if n == 1 {
				start = time.Now()
			}
			if n == int64(b.N) {
				elapsed = time.Since(start)
				close(done)
				go func() { // keep draining until the devices close
					for range tuns[1].Inbound {
					}
				}()
				return
			}
		}
	}()
	b.SetBytes(benchPacket)
	b.ReportAllocs()
	b.ResetTimer()
	var sent int64
loop:
	for {
		select {
		case tuns[0].Outbound <- pkt:
			sent++
		case <-done:
			break loop
		}
	}
	b.StopTimer()
	reportRate(b, elapsed)
	b.ReportMetric(1-float64(b.N)/float64(sent), "packet-loss")
}

// freePort returns a UDP port on 127.0.0.1 that was free a moment ago.
func freePort(b *testing.B) int {
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		b.Skipf("no loopback socket: %v", err)
	}
	defer c.Close()
	return c.LocalAddr().(*net.UDPAddr).Port
}
