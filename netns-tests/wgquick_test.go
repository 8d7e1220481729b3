// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package netnstests

// Our tunnel as wg-quick's userspace implementation (WG_QUICK_USERSPACE_IMPLEMENTATION=tunnel, the
// fallback wg-quick takes where the kernel has no WireGuard), against wireguard-go's own command
// brought up by wg-quick the same way, with wireguard-tools' wg configuring both through their UAPI
// sockets: a full tunnel (AllowedIPs 0.0.0.0/0 and wg-quick's policy routing) that wg-quick down
// removes without a trace, peers added and removed at runtime, the private key rotated under
// traffic, and wg showconf and syncconf.
//
// The sockets live in /var/run/wireguard whatever the network namespace, so every interface has a
// name of its own: wq<pid>-<n>.

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	"golang.zx2c4.com/wireguard/ipc"
	"golang.zx2c4.com/wireguard/tun"

	"github.com/wirebatch/wirebatch/handshake"
	"github.com/wirebatch/wirebatch/netns-tests/harness"
)

// wireguardGoPkg is wireguard-go's command, at the version go.mod requires.
const wireguardGoPkg = "golang.zx2c4.com/wireguard"

// beyond and beyond6 are addresses of host B outside the tunnel's subnets (on B's loopback): only a
// default route through the tunnel reaches them from A.
const (
	beyond  = "10.79.0.1"
	beyond6 = "fd79::1"
)

var wqCounter atomic.Int64

// wqHost is one end of a tunnel that wg-quick brings up.
type wqHost struct {
	harness.Host
	impl  string // the userspace implementation wg-quick runs
	iface string
	key   handshake.PrivateKey
	inner netip.Addr // the address inside the tunnel
	dir   string     // the configuration file and the daemon's log
}

// newWqPair makes hosts A (our tunnel, 10.78.0.1) and B (wireguard-go, 10.78.0.2, and beyond) on
// a veth pair, A with a default route in its main table (via B's veth address), so that a full
// tunnel has a host default route to leave alone.
func newWqPair(t *testing.T) (a, b *wqHost) {
	t.Helper()
	harness.Require(t)
	harness.RequireCommand(t, "wg-quick", "wireguard-tools")
	harness.RequireCommand(t, "wg", "wireguard-tools")
	harness.RequireCommand(t, "ping", "iputils-ping")
	tunnel, wggo := harness.Build(t, tunnelPkg), harness.Build(t, wireguardGoPkg)
	ha, hb := harness.NewPair(t)
	mk := func(h harness.Host, impl, inner string) *wqHost {
		k, err := handshake.GeneratePrivateKey()
		if err != nil {
			t.Fatal(err)
		}
		return &wqHost{Host: h, impl: impl, iface: fmt.Sprintf("wq%d-%d", os.Getpid(), wqCounter.Add(1)),
			key: k, inner: netip.MustParseAddr(inner), dir: t.TempDir()}
	}
	a, b = mk(ha, tunnel, "10.78.0.1"), mk(hb, wggo, "10.78.0.2")
	a.IP("route", "add", "default", "via", b.Addr)
	b.IP("addr", "add", beyond+"/32", "dev", "lo")
	waitCarrier(t, ha)
	return a, b
}

// waitCarrier waits until h's veth has its carrier: until then its routes say "linkdown", and a
// comparison of routing tables would see them change.
func waitCarrier(t *testing.T, h harness.Host) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		// -br prints "NAME STATE ...": UP once the carrier is.
		f := strings.Fields(h.IP("-br", "link", "show", "dev", h.Dev))
		if len(f) > 1 && f[1] == "UP" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("[%s] %s has no carrier after 5 s: %s", h.Name, h.Dev, f)
		}
	}
}

func (h *wqHost) pub() handshake.PublicKey { return h.key.PublicKey() }

// interfaceSection is the [Interface] section of h's configuration: its key, port 51820 and
// address.
func (h *wqHost) interfaceSection() string {
	return fmt.Sprintf("[Interface]\nPrivateKey = %s\nListenPort = 51820\nAddress = %s/24\n", h.key, h.inner)
}

// peerSection is a [Peer] section for peer, with endpoint its veth address when withEndpoint.
func peerSection(peer *wqHost, allowedIPs string, withEndpoint bool) string {
	s := fmt.Sprintf("\n[Peer]\nPublicKey = %s\nAllowedIPs = %s\n", peer.pub(), allowedIPs)
	if withEndpoint {
		s += fmt.Sprintf("Endpoint = %s:51820\n", peer.Addr)
	}
	return s
}

func (h *wqHost) configPath() string { return filepath.Join(h.dir, h.iface+".conf") }
func (h *wqHost) socketPath() string { return filepath.Join("/var/run/wireguard", h.iface+".sock") }
func (h *wqHost) logPath() string    { return filepath.Join(h.dir, "daemon.log") }

// wg runs wg(8) with args in h's namespace and returns its standard output.
func (h *wqHost) wg(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return h.Run(ctx, "wg", args...)
}

// up writes config as h's configuration file and runs wg-quick up on it with h's implementation.
// When the test ends the interface is deleted (if wg-quick down has not) and the daemon must remove
// its socket; the daemon's log is shown if the test failed.
func (h *wqHost) up(t *testing.T, config string) {
	t.Helper()
	if err := os.WriteFile(h.configPath(), []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// wg-quick passes its environment on: TUNNEL_LOG is where our daemon logs.
	h.Run(ctx, "env", "WG_QUICK_USERSPACE_IMPLEMENTATION="+h.impl, "TUNNEL_LOG="+h.logPath(), "wg-quick", "up", h.configPath())
	t.Cleanup(func() {
		if _, err := os.Stat(h.socketPath()); err == nil {
			exec.Command("ip", "-n", h.Name, "link", "del", h.iface).Run()
			if !waitGone(h.socketPath(), 5*time.Second) {
				t.Errorf("%s still exists 5 s after %s was deleted", h.socketPath(), h.iface)
			}
		}
		if log, err := os.ReadFile(h.logPath()); t.Failed() && err == nil {
			t.Logf("[%s] %s's log:\n%s", h.Name, filepath.Base(h.impl), log)
		}
	})
}

// down runs wg-quick down on h's configuration file.
func (h *wqHost) down(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	h.Run(ctx, "wg-quick", "down", h.configPath())
}

// waitGone waits until path does not exist, at most timeout.
func waitGone(path string, timeout time.Duration) bool {
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
			return true
		}
	}
	return false
}

// daemon returns the process ID of h's implementation, the only one in h's namespace.
func (h *wqHost) daemon(t *testing.T) int {
	t.Helper()
	out, err := exec.Command("ip", "netns", "pids", h.Name).Output()
	if err != nil {
		t.Fatalf("ip netns pids %s: %v", h.Name, err)
	}
	var pids []int
	for _, f := range strings.Fields(string(out)) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			t.Fatalf("ip netns pids %s printed %q", h.Name, out)
		}
		if exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid)); err == nil && exe == h.impl {
			pids = append(pids, pid)
		}
	}
	if len(pids) != 1 {
		t.Fatalf("want one %s in %s, found %v", h.impl, h.Name, pids)
	}
	return pids[0]
}

// alive reports whether process pid runs (a zombie has exited: it is not our child to reap).
func alive(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	_, after, _ := strings.Cut(string(stat), ") ")
	return !strings.HasPrefix(after, "Z")
}

// waitExit waits until process pid has exited, at most 5 s after what should have ended it.
func waitExit(t *testing.T, pid int, after string) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); alive(pid); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the daemon (pid %d) still runs 5 s after %s", pid, after)
		}
	}
}

// TestTunnelLauncherFDs: `tunnel INTERFACE` serves a TUN and a listening UAPI socket its launcher
// made, named by wireguard-go's WG_TUN_FD and WG_UAPI_FD, in the background and in the foreground.
// The launcher here is the test: it creates the TUN in its own namespace, moves the interface into
// the host's and hands both descriptors over. A tunnel that made its own would fail: the interface
// and the socket exist already.
func TestTunnelLauncherFDs(t *testing.T) {
	h := newDaemonHost(t)
	ns, tunnel := h.Namespace, h.impl
	for _, foreground := range []string{"0", "1"} {
		tunDev, err := tun.CreateTUN(h.iface, 1420)
		if err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command("ip", "link", "set", "dev", h.iface, "netns", ns.Name).CombinedOutput(); err != nil {
			tunDev.Close()
			t.Fatalf("moving %s into %s: %v: %s", h.iface, ns.Name, err, out)
		}
		uapi, err := ipc.UAPIOpen(h.iface)
		if err != nil {
			tunDev.Close()
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		cmd := ns.Command(ctx, "env", "WG_TUN_FD=3", "WG_UAPI_FD=4", "WG_PROCESS_FOREGROUND="+foreground, tunnel, h.iface)
		cmd.ExtraFiles = []*os.File{tunDev.File(), uapi}
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err = cmd.Start()
		// The daemon holds its own copies now: the interface stays while it runs.
		tunDev.Close()
		uapi.Close()
		if err != nil {
			cancel()
			t.Fatal(err)
		}
		if foreground == "0" {
			// In the background: the command returns once the daemon serves.
			if err := cmd.Wait(); err != nil {
				cancel()
				t.Fatalf("tunnel %s with a launcher's descriptors: %v\n%s", h.iface, err, stderr.String())
			}
		}
		if show := h.wg(t, "show", h.iface); !strings.Contains(show, "interface: "+h.iface) {
			t.Errorf("WG_PROCESS_FOREGROUND=%s: wg show:\n%s", foreground, show)
		}
		pid := h.daemon(t)
		if err := unix.Kill(pid, unix.SIGTERM); err != nil {
			t.Fatal(err)
		}
		if foreground == "1" {
			if err := cmd.Wait(); err != nil {
				t.Errorf("tunnel -f with a launcher's descriptors on SIGTERM: %v\n%s", err, stderr.String())
			}
		}
		waitExit(t, pid, "SIGTERM")
		cancel()
		h.waitRemoved(t, "after SIGTERM")
	}
}

// newDaemonHost returns a host, in a namespace of its own, for a test of the tunnel's daemon (built
// as h.impl) on an interface of a fresh name.
func newDaemonHost(t *testing.T) *wqHost {
	t.Helper()
	harness.Require(t)
	harness.RequireCommand(t, "wg", "wireguard-tools")
	tunnel := harness.Build(t, tunnelPkg)
	ns := harness.NewNamespace(t)
	return &wqHost{Host: harness.Host{Namespace: ns}, impl: tunnel, iface: fmt.Sprintf("wq%d-%d", os.Getpid(), wqCounter.Add(1))}
}

// waitRemoved waits until the daemon has removed its socket and then (with its TUN) its interface,
// at most 5 s each; what says after what, for the failure.
func (h *wqHost) waitRemoved(t *testing.T, what string) {
	t.Helper()
	if !waitGone(h.socketPath(), 5*time.Second) {
		t.Fatalf("%s: %s remains", what, h.socketPath())
	}
	for deadline := time.Now().Add(5 * time.Second); exec.Command("ip", "-n", h.Name, "link", "show", h.iface).Run() == nil; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: %s remains", what, h.iface)
		}
	}
}

// ping pings dst from h until one reply comes back (the first packets wait for a handshake), then
// count times, all of which must be answered.
func (h *wqHost) ping(t *testing.T, dst string, count int) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for exec.Command("ip", "netns", "exec", h.Name, "ping", "-c", "1", "-W", "1", dst).Run() != nil {
		if time.Now().After(deadline) {
			t.Fatalf("[%s] no reply from %s within 15 s", h.Name, dst)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out := h.Run(ctx, "ping", "-c", strconv.Itoa(count), "-i", "0.05", "-W", "2", dst)
	if !strings.Contains(out, fmt.Sprintf("%d received", count)) {
		t.Fatalf("[%s] not every ping to %s was answered:\n%s", h.Name, dst, out)
	}
}

// unreachable checks that pings from h to dst go unanswered.
func (h *wqHost) unreachable(t *testing.T, dst string) {
	t.Helper()
	out, err := exec.Command("ip", "netns", "exec", h.Name, "ping", "-c", "3", "-i", "0.2", "-W", "1", dst).CombinedOutput()
	if err == nil {
		t.Fatalf("[%s] %s still answers:\n%s", h.Name, dst, out)
	}
}

// peerStats parses `wg show IFACE latest-handshakes` and `transfer`: per peer public key, the time of
// the latest handshake and the bytes received and sent.
type peerStats struct {
	handshake time.Time
	rx, tx    uint64
}

func (h *wqHost) peerStats(t *testing.T) map[string]peerStats {
	t.Helper()
	stats := map[string]peerStats{}
	for line := range strings.Lines(h.wg(t, "show", h.iface, "latest-handshakes")) {
		f := strings.Fields(line)
		sec, err := strconv.ParseInt(f[len(f)-1], 10, 64)
		if len(f) != 2 || err != nil {
			t.Fatalf("wg show latest-handshakes printed %q", line)
		}
		var when time.Time
		if sec != 0 {
			when = time.Unix(sec, 0)
		}
		stats[f[0]] = peerStats{handshake: when}
	}
	for line := range strings.Lines(h.wg(t, "show", h.iface, "transfer")) {
		f := strings.Fields(line)
		if len(f) != 3 {
			t.Fatalf("wg show transfer printed %q", line)
		}
		s, ok := stats[f[0]]
		rx, err1 := strconv.ParseUint(f[1], 10, 64)
		tx, err2 := strconv.ParseUint(f[2], 10, 64)
		if !ok || err1 != nil || err2 != nil {
			t.Fatalf("wg show transfer printed %q", line)
		}
		s.rx, s.tx = rx, tx
		stats[f[0]] = s
	}
	return stats
}

// routing is what wg-quick changes in h's namespace: the rules, the routes of the main table and of
// wg-quick's table 51820, and the firewall. (The local table is left out: the kernel adds the veth's
// IPv6 link-local address to it once duplicate address detection is done, whatever wg-quick does.)
func (h *wqHost) routing(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	for _, args := range [][]string{
		{"-4", "rule"}, {"-6", "rule"},
		{"-4", "route", "show", "table", "main"}, {"-6", "route", "show", "table", "main"},
		{"-4", "route", "show", "table", "51820"}, {"-6", "route", "show", "table", "51820"},
	} {
		out, err := exec.Command("ip", append([]string{"-n", h.Name}, args...)...).CombinedOutput()
		if err != nil {
			// A table that was never used does not exist; one emptied stays: both are empty.
			if !bytes.Contains(out, []byte("FIB table does not exist")) {
				t.Fatalf("ip -n %s %s: %v\n%s", h.Name, strings.Join(args, " "), err, out)
			}
			out = nil
		}
		fmt.Fprintf(&b, "ip %s:\n%s", strings.Join(args, " "), out)
	}
	if _, err := exec.LookPath("nft"); err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		fmt.Fprintf(&b, "nft list ruleset:\n%s", h.Run(ctx, "nft", "list", "ruleset"))
	}
	return b.String()
}

// transferTCP sends n random bytes over TCP from `from` to dst:port, where `to` listens, and checks
// that they arrive intact.
func transferTCP(t *testing.T, from, to *wqHost, dst string, n int) {
	t.Helper()
	addr := net.JoinHostPort(dst, "7001")
	var ln net.Listener
	if err := to.Do(func() (err error) { ln, err = net.Listen("tcp4", addr); return err }); err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	got := make(chan [32]byte, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			close(got)
			return
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(60 * time.Second))
		h := sha256.New()
		io.Copy(h, c)
		got <- [32]byte(h.Sum(nil))
	}()
	var c net.Conn
	if err := from.Do(func() (err error) { c, err = net.DialTimeout("tcp4", addr, 10*time.Second); return err }); err != nil {
		t.Fatalf("connecting to %s: %v", addr, err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(60 * time.Second))
	data := make([]byte, n)
	rand.Read(data)
	if _, err := c.Write(data); err != nil {
		t.Fatalf("sending to %s: %v", addr, err)
	}
	c.(*net.TCPConn).CloseWrite()
	if sum, ok := <-got; !ok || sum != sha256.Sum256(data) {
		t.Fatalf("the %d bytes sent to %s did not arrive intact", n, addr)
	}
}

// wantQuietLog checks that our daemon has logged no error: wg's connections, including those of
// `wg show interfaces` that close without a request, are not errors.
func (h *wqHost) wantQuietLog(t *testing.T) {
	t.Helper()
	log, err := os.ReadFile(h.logPath())
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(bytes.ToLower(log), []byte("error")) {
		t.Errorf("%s logged errors:\n%s", h.iface, log)
	}
}

// TestWgQuickFullTunnel: our tunnel under wg-quick with AllowedIPs 0.0.0.0/0 and ::/0 carries ping
// (IPv4 and IPv6) and a TCP transfer to addresses only the tunnel's default routes reach, while its
// own UDP goes around the tunnel (wg-quick's fwmark rules, honoured by the daemon's sockets); wg-quick
// down then leaves rules, routes and firewall exactly as they were (A's own default routes
// included), the socket removed and the daemon gone.
func TestWgQuickFullTunnel(t *testing.T) {
	// wg-quick's firewall rules for a full tunnel go through nft (iptables-restore without it).
	harness.RequireCommand(t, "nft", "nftables")
	a, b := newWqPair(t)
	a.IP("-6", "route", "add", "default", "dev", a.Dev)
	b.IP("addr", "add", beyond6+"/128", "dev", "lo")
	before := a.routing(t)
	b.up(t, b.interfaceSection()+"Address = fd78::2/64\n"+peerSection(a, a.inner.String()+"/32, fd78::1/128", false))
	a.up(t, a.interfaceSection()+"Address = fd78::1/64\n"+peerSection(b, "0.0.0.0/0, ::/0", true))
	pid := a.daemon(t)
	if fwmark := strings.TrimSpace(a.wg(t, "show", a.iface, "fwmark")); fwmark != "0xca6c" {
		t.Errorf("fwmark %q, want wg-quick's 0xca6c (51820)", fwmark)
	}
	for _, dst := range []string{beyond, beyond6} {
		if route := a.IP("route", "get", dst); !strings.Contains(route, "dev "+a.iface) {
			t.Fatalf("%s is not routed through %s:\n%s", dst, a.iface, route)
		}
	}

	a.ping(t, beyond, 20)
	a.ping(t, beyond6, 20)
	const n = 4 << 20
	transferTCP(t, a, b, beyond, n)
	a.wg(t, "show", "interfaces")
	a.wg(t, "show", "all", "dump")
	st := a.peerStats(t)[b.pub().String()]
	if st.tx < n || st.rx == 0 || st.handshake.IsZero() {
		t.Errorf("wg show: peer B %+v; want %d bytes sent through the tunnel, some received, a handshake", st, n)
	}
	a.wantQuietLog(t)

	a.down(t)
	if !waitGone(a.socketPath(), 5*time.Second) {
		t.Errorf("%s remains after wg-quick down", a.socketPath())
	}
	waitExit(t, pid, "wg-quick down")
	if after := a.routing(t); after != before {
		t.Errorf("wg-quick down did not restore the routing:\nbefore:\n%s\nafter:\n%s", before, after)
	}
}

// TestWgQuickRuntimePeers: peers added and removed with wg set while the daemon runs: with no peer
// A reaches nothing; with B added it reaches B, and wg show reports B's latest handshake and
// transfer; a second peer comes and goes; with B removed A reaches nothing again.
func TestWgQuickRuntimePeers(t *testing.T) {
	a, b := newWqPair(t)
	b.up(t, b.interfaceSection()+peerSection(a, a.inner.String()+"/32", true))
	a.up(t, a.interfaceSection())
	if peers := a.wg(t, "show", a.iface, "peers"); peers != "" {
		t.Fatalf("peers %q before any was added", peers)
	}
	a.unreachable(t, b.inner.String())

	start := time.Now().Truncate(time.Second)
	a.wg(t, "set", a.iface, "peer", b.pub().String(), "allowed-ips", b.inner.String()+"/32", "endpoint", b.Addr+":51820")
	a.ping(t, b.inner.String(), 10)
	st := a.peerStats(t)[b.pub().String()]
	if st.handshake.Before(start) || st.handshake.After(time.Now()) || st.rx == 0 || st.tx == 0 {
		t.Errorf("wg show: peer B %+v; want a handshake since %v and bytes both ways", st, start)
	}
	if show := a.wg(t, "show", a.iface); !strings.Contains(show, "latest handshake: ") || !strings.Contains(show, "transfer: ") {
		t.Errorf("wg show lacks B's latest handshake or transfer:\n%s", show)
	}

	other, err := handshake.GeneratePrivateKey()
	if err != nil {
		t.Fatal(err)
	}
	otherPub := other.PublicKey().String()
	a.wg(t, "set", a.iface, "peer", otherPub, "allowed-ips", "10.78.0.9/32", "endpoint", "10.201.255.9:51820", "persistent-keepalive", "25")
	if peers := strings.Fields(a.wg(t, "show", a.iface, "peers")); len(peers) != 2 || !slices.Contains(peers, otherPub) {
		t.Fatalf("peers %q after adding a second", peers)
	}
	a.wg(t, "set", a.iface, "peer", otherPub, "remove")
	if peers := strings.TrimSpace(a.wg(t, "show", a.iface, "peers")); peers != b.pub().String() {
		t.Fatalf("peers %q after removing the second, want B's alone", peers)
	}
	a.ping(t, b.inner.String(), 5)

	a.wg(t, "set", a.iface, "peer", b.pub().String(), "remove")
	if peers := a.wg(t, "show", a.iface, "peers"); peers != "" {
		t.Fatalf("peers %q after B was removed", peers)
	}
	a.unreachable(t, b.inner.String())
	a.wantQuietLog(t)
}

// TestWgQuickKeyRotation: A's private key replaced with wg set under a stream of pings; once B
// knows A's new public key (in place of the old one), a new handshake brings the pings back. Both
// daemons keep running, and our daemon logs no error.
func TestWgQuickKeyRotation(t *testing.T) {
	a, b := newWqPair(t)
	b.up(t, b.interfaceSection()+peerSection(a, a.inner.String()+"/32", false))
	a.up(t, a.interfaceSection()+peerSection(b, b.inner.String()+"/32", true))
	pidA, pidB := a.daemon(t), b.daemon(t)
	a.ping(t, b.inner.String(), 5)
	first := a.peerStats(t)[b.pub().String()].handshake

	stream := a.Start("ping", "-i", "0.05", "-W", "1", "-w", "6", b.inner.String())
	time.Sleep(time.Second)
	oldPub := a.pub()
	newKey, err := handshake.GeneratePrivateKey()
	if err != nil {
		t.Fatal(err)
	}
	keyFile := filepath.Join(a.dir, "new.key")
	if err := os.WriteFile(keyFile, []byte(newKey.String()+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	a.wg(t, "set", a.iface, "private-key", keyFile)
	a.key = newKey
	if got := strings.TrimSpace(a.wg(t, "show", a.iface, "public-key")); got != a.pub().String() {
		t.Fatalf("public key %s after the rotation, want %s", got, a.pub())
	}
	// B moves A's allowed IPs to the new key, then forgets the old one.
	b.wg(t, "set", b.iface, "peer", a.pub().String(), "allowed-ips", a.inner.String()+"/32", "peer", oldPub.String(), "remove")
	stream.Wait(15 * time.Second) // its status is not checked: replies may be lost during the rotation

	a.ping(t, b.inner.String(), 20)
	if st := a.peerStats(t)[b.pub().String()]; !st.handshake.After(first) {
		t.Errorf("latest handshake %v, not after the first %v", st.handshake, first)
	}
	if peers := strings.TrimSpace(b.wg(t, "show", b.iface, "peers")); peers != a.pub().String() {
		t.Errorf("B's peers %q, want A's new key alone", peers)
	}
	if !alive(pidA) || !alive(pidB) {
		t.Fatalf("a daemon died: A %v, B %v", alive(pidA), alive(pidB))
	}
	a.wantQuietLog(t)
}

// TestWgQuickShowconfSyncconf: wg syncconf with wg showconf's output changes nothing; syncconf with
// a peer added (with a preshared key from tunnel genpsk) and a keepalive set applies exactly that;
// syncconf with the first configuration removes them again, and the tunnel still carries traffic.
func TestWgQuickShowconfSyncconf(t *testing.T) {
	a, b := newWqPair(t)
	b.up(t, b.interfaceSection()+peerSection(a, a.inner.String()+"/32", false))
	a.up(t, a.interfaceSection()+peerSection(b, b.inner.String()+"/32", true))
	a.ping(t, b.inner.String(), 3)

	syncconf := func(config string) string {
		t.Helper()
		path := filepath.Join(a.dir, "sync.conf")
		if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
			t.Fatal(err)
		}
		a.wg(t, "syncconf", a.iface, path)
		return a.wg(t, "showconf", a.iface)
	}
	first := a.wg(t, "showconf", a.iface)
	if got := syncconf(first); !sameConfig(got, first) {
		t.Fatalf("syncconf of showconf's output changed it:\n%s\nnow:\n%s", first, got)
	}

	psk, err := exec.Command(a.impl, "genpsk").Output()
	if err != nil {
		t.Fatalf("tunnel genpsk: %v", err)
	}
	other, err := handshake.GeneratePrivateKey()
	if err != nil {
		t.Fatal(err)
	}
	endpointB := "Endpoint = " + b.Addr + ":51820\n"
	if !strings.Contains(first, "PublicKey = "+b.pub().String()+"\n") || !strings.Contains(first, endpointB) {
		t.Fatalf("showconf lacks peer B:\n%s", first)
	}
	changed := strings.Replace(first, endpointB, endpointB+"PersistentKeepalive = 15\n", 1)
	changed = strings.TrimRight(changed, "\n") + fmt.Sprintf("\n\n[Peer]\nPublicKey = %s\nPresharedKey = %s\nAllowedIPs = 10.78.0.9/32, 10.80.0.0/16\nEndpoint = 10.201.255.9:51820\n",
		other.PublicKey(), strings.TrimSpace(string(psk)))
	if got := syncconf(changed); !sameConfig(got, changed) {
		t.Fatalf("syncconf applied something else than asked:\nasked:\n%s\nshowconf:\n%s", changed, got)
	}
	// syncconf keeps what the file leaves unsaid of a peer it keeps (wg(8)): the keepalive is
	// turned off explicitly.
	back := strings.Replace(first, endpointB, endpointB+"PersistentKeepalive = off\n", 1)
	if got := syncconf(back); !sameConfig(got, first) {
		t.Fatalf("syncconf back to the first configuration:\n%s\nshowconf:\n%s", first, got)
	}
	a.ping(t, b.inner.String(), 5)
	a.wantQuietLog(t)
}

// sameConfig compares two wg showconf outputs, the order of their peers and of each peer's allowed
// IPs aside (they follow the device's, which need not be the order they were set in). Within a
// section, wg prints keys in a fixed order.
func sameConfig(x, y string) bool {
	sections := func(s string) []string {
		parts := strings.Split(strings.TrimSpace(s), "\n\n")
		for i, part := range parts {
			lines := strings.Split(part, "\n")
			for j, line := range lines {
				if ips, ok := strings.CutPrefix(line, "AllowedIPs = "); ok {
					list := strings.Split(ips, ", ")
					slices.Sort(list)
					lines[j] = "AllowedIPs = " + strings.Join(list, ", ")
				}
			}
			parts[i] = strings.Join(lines, "\n")
		}
		slices.Sort(parts[1:])
		return parts
	}
	return slices.Equal(sections(x), sections(y))
}

// TestTunnelDaemon: `tunnel INTERFACE` returns once its detached daemon serves the socket, the
// daemon holding none of its caller's descriptors (the command's output pipes reach EOF when it
// returns) in a session of its own; a second `tunnel INTERFACE` is refused while the first runs;
// SIGTERM ends the daemon, removing its socket and its interface. `tunnel -f INTERFACE`, and
// `tunnel INTERFACE` with WG_PROCESS_FOREGROUND=1, serve in the foreground and exit 0 on SIGINT,
// also removing both. A daemon whose socket is removed exits, and logs to the file TUNNEL_LOG
// names.
func TestTunnelDaemon(t *testing.T) {
	h := newDaemonHost(t)
	ns, tunnel := h.Namespace, h.impl

	// Run waits for EOF on the command's stdout and stderr: a daemon holding them would hang it.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ns.Run(ctx, tunnel, h.iface)
	if _, err := os.Stat(h.socketPath()); err != nil {
		t.Fatalf("tunnel returned before its socket existed: %v", err)
	}
	if show := h.wg(t, "show", h.iface); !strings.Contains(show, "interface: "+h.iface) || strings.Contains(show, "peer:") {
		t.Fatalf("wg show of a new interface:\n%s", show)
	}
	pid := h.daemon(t)
	if sid, err := unix.Getsid(pid); err != nil || sid != pid {
		t.Errorf("the daemon's session is %d (%v), want its own (%d)", sid, err, pid)
	}
	for fd := range 3 {
		if target, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%d", pid, fd)); err != nil || target != os.DevNull {
			t.Errorf("the daemon's descriptor %d is %q (%v), want %s", fd, target, err, os.DevNull)
		}
	}

	out, err := ns.Command(ctx, tunnel, h.iface).CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 || !strings.HasPrefix(string(out), "tunnel: ") {
		t.Errorf("a second tunnel %s: %v, output %q; want status 1 and a message", h.iface, err, out)
	}
	if !alive(pid) {
		t.Fatal("the second tunnel's failure ended the first")
	}

	if err := unix.Kill(pid, unix.SIGTERM); err != nil {
		t.Fatal(err)
	}
	waitExit(t, pid, "SIGTERM")
	h.waitRemoved(t, "after SIGTERM")

	for _, cmd := range [][]string{{tunnel, "-f", h.iface}, {"env", "WG_PROCESS_FOREGROUND=1", tunnel, h.iface}} {
		fg := ns.Start(cmd[0], cmd[1:]...)
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			if _, err := os.Stat(h.socketPath()); err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%q made no socket within 10 s:\n%s", cmd, fg.Stderr())
			}
		}
		// In the foreground: the process serving is the one started (ip netns exec and env exec it).
		if pid := h.daemon(t); pid != fg.Cmd.Process.Pid {
			t.Errorf("%q: the tunnel serving is process %d, not the one started (%d)", cmd, pid, fg.Cmd.Process.Pid)
		}
		h.wg(t, "set", h.iface, "listen-port", "51820", "fwmark", "0x1234")
		if got := h.wg(t, "show", h.iface, "fwmark"); strings.TrimSpace(got) != "0x1234" {
			t.Errorf("fwmark %q after wg set fwmark 0x1234", got)
		}
		if err := fg.Stop(5 * time.Second); err != nil {
			t.Fatalf("%q on SIGINT: %v\n%s", cmd, err, fg.Stderr())
		}
		h.waitRemoved(t, fmt.Sprintf("after %q exited", cmd))
	}

	// Removing the socket stops the daemon too, as it does wireguard-go's; this one logs, verbosely,
	// to TUNNEL_LOG.
	logFile := filepath.Join(t.TempDir(), "daemon.log")
	ns.Run(ctx, "env", "TUNNEL_LOG="+logFile, "LOG_LEVEL=verbose", tunnel, h.iface)
	pid = h.daemon(t)
	if err := os.Remove(h.socketPath()); err != nil {
		t.Fatal(err)
	}
	waitExit(t, pid, "its socket was removed")
	h.waitRemoved(t, "after its socket was removed")
	log, err := os.ReadFile(logFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"serving " + h.socketPath(), h.socketPath() + " was removed"} {
		if !bytes.Contains(log, []byte(want)) {
			t.Errorf("the log lacks %q:\n%s", want, log)
		}
	}
}
