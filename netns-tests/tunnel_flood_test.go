// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package netnstests

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"io"
	"net"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/crypto/blake2s"
	"golang.org/x/sys/unix"

	"github.com/wirebatch/wirebatch/netns-tests/harness"
)

const (
	floodRate    = 12000             // initiations a second: B is under load within the 200 ms waited
	floodSources = "10.203.0.0/16"   // 65536 spoofed IPv4 sources
	floodPhase   = 2 * time.Second   // one quiet or one flooded stretch of the TCP stream
	rekeyTimeout = 5 * time.Second   // REKEY_TIMEOUT, WireGuard paper section 6.1
	floodTCPPort = 9200              // the stream's port on B's tunnel address
	initiationSz = 148               // handshake initiation, WireGuard paper section 5.4.2
	mac1Offset   = initiationSz - 32 // MAC1 covers the message up to itself
)

// TestTunnelHandshakeFlood: B answers a flood of handshake initiations whose MAC1 is valid (the
// cheap check any sender who knows B's public key passes) from 65536 spoofed sources while a TCP
// stream runs from A to B through the tunnel. The stream keeps at least half its throughput
// (median of three quiet and three flooded stretches, alternating), a tunnel restarted at A
// completes a new handshake with B within 2 x REKEY_TIMEOUT despite the flood, and B's counters
// account for every flood message the kernel delivered to its socket (accepted, answered with a
// cookie reply, rate limited, rejected or dropped from a full queue), the kernel's receive-buffer
// drops accounting for the rest.
func TestTunnelHandshakeFlood(t *testing.T) {
	harness.Require(t)
	bin := harness.Build(t, tunnelPkg)
	a, b := newTunnelHosts(t, bin, bin)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// B's cookie replies to the spoofed sources go back over the veth (A drops them, it does not
	// forward), and B's reverse-path filter sees the sources as reachable there.
	b.Run(ctx, "ip", "route", "add", floodSources, "via", a.Addr)
	a.start(t, b)
	b.start(t, a)
	reach := func(timeout time.Duration) time.Duration {
		start := time.Now()
		for time.Since(start) < timeout {
			if err := a.Command(ctx, "ping", "-c", "1", "-W", "1", b.inner.String()).Run(); err == nil {
				return time.Since(start)
			}
		}
		t.Fatalf("no ping reply from B through the tunnel within %v", timeout)
		return 0
	}
	reach(10 * time.Second)

	var received atomic.Int64
	stopStream := tcpSink(t, a, b, &received)
	fl := newFlooder(t, a, b, floodRate)
	rate := func(d time.Duration) float64 {
		n0 := received.Load()
		time.Sleep(d)
		return float64(received.Load()-n0) / d.Seconds()
	}
	rate(time.Second) // slow start
	var ratios []float64
	for range 3 {
		quiet := rate(floodPhase)
		fl.start()
		time.Sleep(200 * time.Millisecond) // B's handshake queue fills
		flooded := rate(floodPhase)
		fl.stop()
		ratios = append(ratios, flooded/quiet)
		t.Logf("TCP stream: %.0f Mbit/s quiet, %.0f Mbit/s flooded (%.2f)", quiet*8/1e6, flooded*8/1e6, flooded/quiet)
	}
	stopStream()
	slices.Sort(ratios)
	if ratios[1] < 0.5 {
		t.Errorf("under the flood the stream kept %.2f of its throughput (median of %.2f): want at least half", ratios[1], ratios)
	}

	// A new handshake under the flood: a restarted A has no session, B is under load and answers
	// its first initiation with a cookie reply, the retry after REKEY_TIMEOUT carries MAC2.
	fl.start()
	a.stop(t)
	a.start(t, b)
	took := reach(2 * rekeyTimeout)
	fl.stop()
	t.Logf("a restarted A reached B after %v under the flood", took.Round(time.Millisecond))

	time.Sleep(500 * time.Millisecond) // B's queue drains
	rcvbuf := snmp(t, b.Namespace, "Udp", "RcvbufErrors") - fl.rcvbufBefore
	c := b.stop(t)
	var hm struct {
		M struct {
			Received      uint64 `json:"received"`
			QueueFull     uint64 `json:"queue_full"`
			Accepted      uint64 `json:"accepted"`
			CookieReplies uint64 `json:"cookie_replies"`
			RateLimited   uint64 `json:"rate_limited"`
			Rejected      uint64 `json:"rejected"`
		} `json:"handshake_messages"`
	}
	lines := strings.Split(strings.TrimSpace(b.proc.Stdout()), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &hm); err != nil {
		t.Fatalf("B's counters: %v", err)
	}
	m := hm.M
	t.Logf("flood: %d initiations sent; B: %+v, %d dropped by the kernel (receive buffer), %d handshakes",
		fl.sent.Load(), m, rcvbuf, c.HandshakesCompleted)
	if sum := m.QueueFull + m.Accepted + m.CookieReplies + m.RateLimited + m.Rejected; sum != m.Received {
		t.Errorf("B received %d handshake messages but accounts for %d", m.Received, sum)
	}
	if got := m.Received + rcvbuf; got < fl.sent.Load() {
		t.Errorf("%d flood messages sent, B and its kernel account for %d", fl.sent.Load(), got)
	}
	if m.CookieReplies+m.RateLimited+m.QueueFull == 0 {
		t.Errorf("B never went under load: %+v", m)
	}
}

// tcpSink streams from A to B's tunnel address until the returned func is called, adding the bytes
// B reads to received.
func tcpSink(t *testing.T, a, b *tunnelHost, received *atomic.Int64) (stop func()) {
	t.Helper()
	var ln net.Listener
	if err := b.Do(func() (err error) {
		ln, err = net.Listen("tcp4", netip.AddrPortFrom(b.inner, floodTCPPort).String())
		return err
	}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		buf := make([]byte, 256<<10)
		for {
			n, err := c.Read(buf)
			received.Add(int64(n))
			if err != nil {
				return
			}
		}
	}()
	var conn net.Conn
	if err := a.Do(func() (err error) {
		conn, err = net.DialTimeout("tcp4", netip.AddrPortFrom(b.inner, floodTCPPort).String(), 10*time.Second)
		return err
	}); err != nil {
		ln.Close()
		t.Fatal(err)
	}
	go func() {
		defer wg.Done()
		buf := make([]byte, 256<<10)
		io.ReadFull(rand.Reader, buf)
		for {
			if _, err := conn.Write(buf); err != nil {
				return
			}
		}
	}()
	return func() {
		conn.Close()
		ln.Close()
		wg.Wait()
	}
}

// flooder sends handshake initiations to B from A's namespace over a raw socket, each from the
// next of floodSources' addresses: random contents, MAC1 valid for B's public key, no MAC2.
type flooder struct {
	t            *testing.T
	rate         int // initiations a second
	fd           int
	dst          [4]byte
	mac1Key      [32]byte
	sent         atomic.Uint64
	rcvbufBefore uint64
	quit         chan struct{}
	done         chan struct{}
}

func newFlooder(t *testing.T, a, b *tunnelHost, rate int) *flooder {
	f := &flooder{t: t, rate: rate, dst: netip.MustParseAddr(b.Addr).As4()}
	pub := b.key.PublicKey()
	f.mac1Key = blake2s.Sum256(append([]byte("mac1----"), pub[:]...))
	if err := a.Do(func() (err error) {
		f.fd, err = unix.Socket(unix.AF_INET, unix.SOCK_RAW, unix.IPPROTO_RAW) // IP_HDRINCL implied
		return err
	}); err != nil {
		t.Fatalf("raw socket: %v", err)
	}
	t.Cleanup(func() { unix.Close(f.fd) })
	f.rcvbufBefore = snmp(t, b.Namespace, "Udp", "RcvbufErrors")
	return f
}

func (f *flooder) start() {
	f.quit, f.done = make(chan struct{}), make(chan struct{})
	go f.run()
}

func (f *flooder) stop() {
	close(f.quit)
	<-f.done
}

// run sends rate/100 initiations every 10 ms until stopped.
func (f *flooder) run() {
	defer close(f.done)
	const ipHdr, udpHdr = 20, 8
	pkt := make([]byte, ipHdr+udpHdr+initiationSz)
	pkt[0], pkt[8], pkt[9] = 0x45, 64, unix.IPPROTO_UDP // the kernel fills length, ID and checksum
	copy(pkt[16:20], f.dst[:])
	binary.BigEndian.PutUint16(pkt[22:], 51820)
	binary.BigEndian.PutUint16(pkt[24:], udpHdr+initiationSz) // UDP checksum 0: none (RFC 768)
	msg := pkt[ipHdr+udpHdr:]
	sa := &unix.SockaddrInet4{Addr: f.dst}
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for i := uint32(f.sent.Load()); ; {
		select {
		case <-f.quit:
			return
		case <-tick.C:
		}
		for range f.rate / 100 {
			src := i * 40503 // an odd multiplier walks all 65536 hosts before repeating
			pkt[12], pkt[13], pkt[14], pkt[15] = 10, 203, byte(src>>8), byte(src)
			binary.BigEndian.PutUint16(pkt[20:], uint16(1024+i%60000))
			rand.Read(msg[4:mac1Offset])
			binary.LittleEndian.PutUint32(msg, 1) // message type 1, three reserved zero bytes
			i++
			mac, _ := blake2s.New128(f.mac1Key[:]) // MAC: keyed BLAKE2s-128 (paper section 5.4)
			mac.Write(msg[:mac1Offset])
			mac.Sum(msg[:mac1Offset])
			if err := unix.Sendto(f.fd, pkt, 0, sa); err != nil {
				f.t.Errorf("sending a spoofed initiation: %v", err)
				return
			}
			f.sent.Add(1)
		}
	}
}
