package dataplane_test

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/crypto/curve25519"
	"golang.zx2c4.com/wireguard/conn/bindtest"
	"golang.zx2c4.com/wireguard/device"
	"golang.zx2c4.com/wireguard/tun/tuntest"

	"github.com/wirebatch/wirebatch/dataplane"
)

// The whole in-memory two-device path: packets injected into A's TUN, encrypted, carried to B,
// decrypted and written to B's TUN, as many as b.N, timed from the first arrival to the last (as
// wireguard-go's own BenchmarkThroughput does). wireguard-go's device runs beside it in the same run,
// on its own doubles (tun/tuntest's ChannelTUN, conn/bindtest's ChannelBinds), driven the same way:
// one goroutine injecting one packet per call as fast as the TUN takes it.
//
//	go test -run '^$' -bench TwoDevice ./dataplane/

const benchPacket = 1420

func BenchmarkTwoDevice(b *testing.B) {
	b.Run("wirebatch", benchWirebatch)
	b.Run("wireguard-go", benchWireguardGo)
}

func reportRate(b *testing.B, elapsed time.Duration) {
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "pkts/s")
	b.ReportMetric(float64(elapsed.Nanoseconds())/float64(b.N), "ns/pkt")
}

func benchWirebatch(b *testing.B) {
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
	ns := newNodes(b, dataplane.Config{}, [2]func([][]byte){nil, count})
	pkt := packet(ip4[0], ip4[1], benchPacket, 1)
	b.SetBytes(benchPacket)
	b.ReportAllocs()
	b.ResetTimer()
	go func() {
		for {
			select {
			case <-done:
				return
			default:
			}
			if ns[0].tun.Send(pkt) != nil {
				return
			}
		}
	}()
	<-done
	elapsed := time.Since(start)
	b.StopTimer()
	reportRate(b, elapsed)
	for _, n := range ns {
		n.dev.Close()
	}
}

func benchWireguardGo(b *testing.B) {
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
	var tuns [2]*tuntest.ChannelTUN
	var devs [2]*device.Device
	addrs := [2]netip.Addr{netip.MustParseAddr("1.0.0.1"), netip.MustParseAddr("1.0.0.2")}
	for i := range devs {
		o := 1 - i
		tuns[i] = tuntest.NewChannelTUN()
		devs[i] = device.NewDevice(tuns[i].TUN(), binds[i], device.NewLogger(device.LogLevelError, ""))
		// bindtest: bind 0 reaches bind 1 at port 1, bind 1 reaches bind 0 at port 2.
		cfg := fmt.Sprintf("private_key=%s\nlisten_port=0\nreplace_peers=true\npublic_key=%s\nprotocol_version=1\nreplace_allowed_ips=true\nallowed_ip=%s/32\nendpoint=127.0.0.1:%d\n",
			hex.EncodeToString(priv[i][:]), hex.EncodeToString(pub[o]), addrs[o], i+1)
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
		tuns[i].Outbound <- tuntest.Ping(addrs[1-i], addrs[i])
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
loop:
	for {
		select {
		case tuns[0].Outbound <- pkt:
		case <-done:
			break loop
		}
	}
	b.StopTimer()
	reportRate(b, elapsed)
	_ = io.Discard
}
