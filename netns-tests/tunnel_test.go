// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package netnstests

// The example tunnel (examples/tunnel) between two network namespaces: two tunnels carry traffic
// both ways, a tunnel and wireguard-go (netns-tests/cmd/wgpeer) interoperate whichever starts the
// traffic, and a rekey under traffic loses nothing. Datagrams are sent from Go sockets opened inside
// the namespaces (Namespace.Do) or by loadgen.

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/wirebatch/wirebatch/handshake"
	"github.com/wirebatch/wirebatch/netns-tests/harness"
)

const (
	tunnelPkg = "github.com/wirebatch/wirebatch/examples/tunnel"
	wgpeerPkg = "github.com/wirebatch/wirebatch/netns-tests/cmd/wgpeer"
	loadgenPk = "github.com/wirebatch/wirebatch/loadgen"
)

// tunnelHost is one end: a namespace, its keys, its tunnel address and the process serving it.
type tunnelHost struct {
	harness.Host
	key    handshake.PrivateKey
	inner  netip.Addr // address inside the tunnel
	binary string     // tunnel or wgpeer
	proc   *harness.Process
	mtu    int // the configuration's MTU; 0 leaves the default (1420)
}

// newTunnelHosts makes two namespaces joined by a veth, with tunnel addresses 10.77.0.1 and .2.
func newTunnelHosts(t *testing.T, binA, binB string) (a, b *tunnelHost) {
	t.Helper()
	ha, hb := harness.NewPair(t)
	mk := func(h harness.Host, inner, bin string) *tunnelHost {
		k, err := handshake.GeneratePrivateKey()
		if err != nil {
			t.Fatal(err)
		}
		return &tunnelHost{Host: h, key: k, inner: netip.MustParseAddr(inner), binary: bin}
	}
	return mk(ha, "10.77.0.1", binA), mk(hb, "10.77.0.2", binB)
}

// start writes h's configuration (peer at its veth address) and starts h's binary with extra flags.
func (h *tunnelHost) start(t *testing.T, peer *tunnelHost, extra ...string) {
	t.Helper()
	pub := peer.key.PublicKey()
	config := fmt.Sprintf("[Interface]\nPrivateKey = %s\nListenPort = 51820\nAddress = %s/24\n\n[Peer]\nPublicKey = %s\nAllowedIPs = %s/32\nEndpoint = %s:51820\n",
		h.key.String(), h.inner, base64.StdEncoding.EncodeToString(pub[:]), peer.inner, peer.Addr)
	if h.mtu != 0 {
		config = strings.Replace(config, "\n\n[Peer]", fmt.Sprintf("\nMTU = %d\n\n[Peer]", h.mtu), 1)
	}
	path := filepath.Join(t.TempDir(), "wb0.conf")
	if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	h.proc = h.Start(h.binary, append([]string{"-config", path, "-iface", "wb0"}, extra...)...)
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(h.proc.Stderr(), "wb0 up") {
		// Wait(0) reports "still running" unless the process has exited.
		if err := h.proc.Wait(0); !strings.Contains(fmt.Sprint(err), "still running") {
			t.Fatalf("%s exited: %v\n%s", h.binary, err, h.proc.Stderr())
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not bring wb0 up within 10s:\n%s", h.binary, h.proc.Stderr())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// socket opens a UDP socket on h's tunnel address inside h's namespace.
func (h *tunnelHost) socket(t *testing.T, port uint16) *net.UDPConn {
	t.Helper()
	var c *net.UDPConn
	err := h.Do(func() error {
		var err error
		c, err = net.ListenUDP("udp4", net.UDPAddrFromAddrPort(netip.AddrPortFrom(h.inner, port)))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// tunnelCounters is the JSON line of the tunnel's command-line contract.
type tunnelCounters struct {
	SentPackets         uint64            `json:"sent_packets"`
	SentBytes           uint64            `json:"sent_bytes"`
	ReceivedPackets     uint64            `json:"received_packets"`
	ReceivedBytes       uint64            `json:"received_bytes"`
	HandshakesCompleted uint64            `json:"handshakes_completed"`
	Dropped             map[string]uint64 `json:"dropped"`
}

// lastCounters parses the last line of a tunnel's stdout.
func lastCounters(t *testing.T, stdout string) tunnelCounters {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	var c tunnelCounters
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &c); err != nil {
		t.Fatalf("tunnel printed %q: %v", stdout, err)
	}
	for _, v := range []string{"no_route", "no_key", "key_expired", "auth_failed", "replay", "bad_source", "malformed"} {
		if _, ok := c.Dropped[v]; !ok {
			t.Fatalf("counters %q lack dropped.%s", lines[len(lines)-1], v)
		}
	}
	return c
}

// stop interrupts a tunnel and returns the counters it printed on exit.
func (h *tunnelHost) stop(t *testing.T) tunnelCounters {
	t.Helper()
	if err := h.proc.Stop(5 * time.Second); err != nil {
		t.Fatalf("%s did not exit cleanly on SIGINT: %v\n%s", h.binary, err, h.proc.Stderr())
	}
	return lastCounters(t, h.proc.Stdout())
}

// wantNoBadDrops checks that nothing was dropped as forged, replayed, expired, misrouted or
// malformed. no_route is left out: the kernel sends IPv6 link-local multicast (MLD reports, router
// solicitations) into the new interface, which no peer's allowed IPs cover.
func wantNoBadDrops(t *testing.T, who string, c tunnelCounters) {
	t.Helper()
	for _, v := range []string{"auth_failed", "replay", "bad_source", "malformed", "key_expired"} {
		if c.Dropped[v] != 0 {
			t.Errorf("%s dropped %d packets as %s: %+v", who, c.Dropped[v], v, c)
		}
	}
}

// exchange sends from `from` to `to` until one datagram gets through (the first one starts the
// handshake), then n numbered datagrams each way, which must all arrive.
func exchange(t *testing.T, from, to *net.UDPConn, n int) {
	t.Helper()
	toAddr, fromAddr := to.LocalAddr().(*net.UDPAddr).AddrPort(), from.LocalAddr().(*net.UDPAddr).AddrPort()
	buf := make([]byte, 64)
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := from.WriteToUDPAddrPort([]byte("hello"), toAddr); err != nil {
			t.Fatal(err)
		}
		to.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
		if k, _, err := to.ReadFromUDPAddrPort(buf); err == nil && string(buf[:k]) == "hello" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("nothing from %v reached %v through the tunnel within 10s", fromAddr, toAddr)
		}
	}
	for _, dir := range []struct {
		src, dst *net.UDPConn
		dstAddr  netip.AddrPort
	}{{from, to, toAddr}, {to, from, fromAddr}} {
		for i := range n {
			if _, err := dir.src.WriteToUDPAddrPort(fmt.Appendf(nil, "%d", i), dir.dstAddr); err != nil {
				t.Fatal(err)
			}
		}
		seen := map[string]bool{}
		dir.dst.SetReadDeadline(time.Now().Add(5 * time.Second))
		for len(seen) < n {
			k, _, err := dir.dst.ReadFromUDPAddrPort(buf)
			if err != nil {
				t.Fatalf("%d of %d datagrams to %v arrived: %v", len(seen), n, dir.dstAddr, err)
			}
			seen[string(buf[:k])] = true
		}
	}
}

// TestTunnelPair: two tunnels carry datagrams both ways; SIGUSR1 prints the counters without
// stopping, and the counters printed on exit account for the traffic.
func TestTunnelPair(t *testing.T) {
	harness.Require(t)
	bin := harness.Build(t, tunnelPkg)
	a, b := newTunnelHosts(t, bin, bin)
	a.start(t, b, "-stats-interval", "1s")
	b.start(t, a, "-stats-interval", "1s")
	sa, sb := a.socket(t, 7000), b.socket(t, 7000)
	const n = 200
	exchange(t, sa, sb, n)

	// A sample on SIGUSR1, the process still running.
	if err := a.proc.Cmd.Process.Signal(syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(a.proc.Stdout(), "\n") {
		if time.Now().After(deadline) {
			t.Fatal("no counters on stdout within 5s of SIGUSR1")
		}
		time.Sleep(20 * time.Millisecond)
	}
	sample := lastCounters(t, a.proc.Stdout())
	time.Sleep(1100 * time.Millisecond) // one -stats-interval: a stats line is logged
	if !strings.Contains(a.proc.Stderr(), "stats: sent") {
		t.Errorf("no stats line on stderr after 1s:\n%s", a.proc.Stderr())
	}

	ca, cb := a.stop(t), b.stop(t)
	// Closing the TUN removed the interface, with its addresses and routes.
	if out, err := a.Command(context.Background(), "ip", "link", "show", "wb0").CombinedOutput(); err == nil {
		t.Errorf("wb0 still exists after the tunnel exited:\n%s", out)
	}
	if strings.Count(strings.TrimSpace(a.proc.Stdout()), "\n") != 1 {
		t.Errorf("a's stdout should be two JSON lines (SIGUSR1, exit):\n%s", a.proc.Stdout())
	}
	for _, c := range []struct {
		who string
		c   tunnelCounters
	}{{"a", ca}, {"b", cb}} {
		// Every datagram each way, plus the first hello (a) and keepalives.
		if c.c.SentPackets < n || c.c.ReceivedPackets < n || c.c.HandshakesCompleted != 1 {
			t.Errorf("%s: %+v; want at least %d packets each way and one handshake", c.who, c.c, n)
		}
		if c.c.SentBytes < c.c.SentPackets*32 || c.c.ReceivedBytes < c.c.ReceivedPackets*32 {
			t.Errorf("%s: bytes %+v below the 32-byte transport overhead per packet", c.who, c.c)
		}
		wantNoBadDrops(t, c.who, c.c)
	}
	if sample.SentPackets > ca.SentPackets || sample.SentPackets < n {
		t.Errorf("SIGUSR1 sample %+v inconsistent with the final counters %+v", sample, ca)
	}
	if ca.SentPackets != cb.ReceivedPackets || cb.SentPackets != ca.ReceivedPackets {
		t.Errorf("over a clean veth every message sent should be received: a %+v, b %+v", ca, cb)
	}
	if !strings.Contains(a.proc.Stderr(), "completed (initiator)") || !strings.Contains(b.proc.Stderr(), "completed (responder)") {
		t.Errorf("handshake logs: a:\n%s\nb:\n%s", a.proc.Stderr(), b.proc.Stderr())
	}
}

// TestTunnelWireGuardGo: a tunnel and wireguard-go interoperate, whichever side sends first (and so
// initiates the handshake), with datagrams both ways.
func TestTunnelWireGuardGo(t *testing.T) {
	harness.Require(t)
	tunnel, wgpeer := harness.Build(t, tunnelPkg), harness.Build(t, wgpeerPkg)
	for _, tunnelFirst := range []bool{true, false} {
		name := map[bool]string{true: "tunnel initiates", false: "wireguard-go initiates"}[tunnelFirst]
		t.Run(name, func(t *testing.T) {
			ours, wg := newTunnelHosts(t, tunnel, wgpeer)
			ours.start(t, wg)
			wg.start(t, ours)
			so, sw := ours.socket(t, 7000), wg.socket(t, 7000)
			const n = 200
			want := "completed (initiator)"
			if tunnelFirst {
				exchange(t, so, sw, n)
			} else {
				exchange(t, sw, so, n)
				want = "completed (responder)"
			}
			c := ours.stop(t)
			if !strings.Contains(ours.proc.Stderr(), want) || strings.Count(ours.proc.Stderr(), "handshake with") > 2 {
				t.Errorf("tunnel's log should show one handshake, %q:\n%s", want, ours.proc.Stderr())
			}
			if c.ReceivedPackets < n || c.SentPackets < n || c.HandshakesCompleted != 1 {
				t.Errorf("counters %+v; want at least %d packets each way and one handshake", c, n)
			}
			wantNoBadDrops(t, "tunnel", c)
			t.Logf("tunnel: %+v", c)
		})
	}
}

// TestTunnelRekey: with -rekey-after-time 3s, paced loadgen traffic over 8 s spans a rekey (the
// initiator's keypair is 3 s old and REKEY_TIMEOUT, 5 s, has passed since the first handshake);
// loadgen must count no loss, and both tunnels must have installed a second keypair.
func TestTunnelRekey(t *testing.T) {
	harness.Require(t)
	tunnel, loadgen := harness.Build(t, tunnelPkg), harness.Build(t, loadgenPk)
	a, b := newTunnelHosts(t, tunnel, tunnel)
	a.start(t, b, "-rekey-after-time", "3s")
	b.start(t, a, "-rekey-after-time", "3s")
	to := netip.AddrPortFrom(b.inner, 9000).String()
	recv := b.Start(loadgen, "recv", "-listen", to, "-quiet")

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	args := []string{"send", "-to", to, "-rate", "2000", "-size", "200", "-duration", "8s", "-json", "-quiet"}
	var out []byte
	for attempt := 0; ; attempt++ {
		var err error
		out, err = a.Command(ctx, loadgen, args...).Output()
		if err == nil {
			break
		}
		var ee *exec.ExitError
		if attempt < 20 && errors.As(err, &ee) && strings.Contains(string(ee.Stderr), "refused") {
			time.Sleep(100 * time.Millisecond) // the receiver is still starting
			continue
		}
		t.Fatalf("loadgen %s: %v", strings.Join(args, " "), err)
	}
	var r loadgenReport
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("loadgen printed %q: %v", out, err)
	}
	recv.Stop(5 * time.Second)
	ca, cb := a.stop(t), b.stop(t)
	t.Logf("loadgen: sent %d, received %d, lost %d; a %+v; b %+v", r.Sent, r.Received, r.Lost, ca, cb)
	if r.Sent < 8*2000*9/10 || r.Lost != 0 || r.Received != r.Sent || r.Duplicates != 0 {
		t.Errorf("loadgen %+v: want every datagram delivered across the rekey", r)
	}
	if ca.HandshakesCompleted < 2 || cb.HandshakesCompleted < 2 {
		t.Errorf("handshakes completed: a %d, b %d; want a rekey (at least 2 each)", ca.HandshakesCompleted, cb.HandshakesCompleted)
	}
	wantNoBadDrops(t, "a", ca)
	wantNoBadDrops(t, "b", cb)
}

// TestTunnelExitsWhenInterfaceDeleted: deleting the tunnel's interface ends the tunnel with a
// non-zero exit and a message, instead of leaving it running with a dead data path.
func TestTunnelExitsWhenInterfaceDeleted(t *testing.T) {
	harness.Require(t)
	bin := harness.Build(t, tunnelPkg)
	a, b := newTunnelHosts(t, bin, bin)
	a.start(t, b)
	a.Run(context.Background(), "ip", "link", "del", "wb0")
	err := a.proc.Wait(10 * time.Second)
	if strings.Contains(fmt.Sprint(err), "still running") {
		t.Fatalf("the tunnel kept running after its interface was deleted:\n%s", a.proc.Stderr())
	}
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() == 0 || !strings.Contains(a.proc.Stderr(), "wb0 was deleted") {
		t.Fatalf("exit %v, stderr:\n%s", err, a.proc.Stderr())
	}
}

// TestTunnelMTUMismatch: wireguard-go at MTU 1500 pings our tunnel at MTU 1420 with 1500-byte
// packets it does not fragment (ping -M dont -s 1472): their datagrams are longer than any our MTU
// makes, and every ping is answered (our tunnel dropped them all as malformed before PeerMTU).
func TestTunnelMTUMismatch(t *testing.T) {
	harness.Require(t)
	tunnel, wgpeer := harness.Build(t, tunnelPkg), harness.Build(t, wgpeerPkg)
	ours, wg := newTunnelHosts(t, tunnel, wgpeer)
	wg.mtu = 1500
	ours.start(t, wg)
	wg.start(t, ours)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out := wg.Run(ctx, "ping", "-c", "20", "-i", "0.1", "-W", "2", "-M", "dont", "-s", "1472", ours.inner.String())
	if !strings.Contains(out, "20 received") {
		t.Fatalf("not every 1500-byte ping was answered:\n%s", out)
	}
	if c := ours.stop(t); c.Dropped["malformed"] != 0 {
		t.Errorf("our tunnel dropped %d datagrams as malformed", c.Dropped["malformed"])
	}
}
