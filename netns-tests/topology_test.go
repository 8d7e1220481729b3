// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package netnstests

// The topology of the tunnel scenarios: hosts A and B, each running a WireGuard implementation on a
// TUN interface, joined either by one veth pair or through a middle namespace M that runs the
// impairment relay:
//
//	direct:  A 10.201.1.1 ---------------------------- 10.201.1.2 B
//	relay:   A 10.201.1.1 --- 10.201.1.2 M 10.201.2.1 --- 10.201.2.2 B
//
// Inside the tunnel A is 10.77.0.1 and B 10.77.0.2. Through the relay, A's peer endpoint is the
// relay's left address and B's is the relay's right-hand socket; B sees every datagram of A coming
// from the relay, so roaming keeps the relay as A's endpoint. Every namespace is private to one test,
// so the fixed addresses never meet another test's.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wirebatch/wirebatch/handshake"
	"github.com/wirebatch/wirebatch/netns-tests/harness"
)

// impl is a WireGuard implementation a scenario can run at one end of the tunnel. Both take the same
// wg-quick configuration and the same -config and -iface flags.
type impl struct {
	name string
	pkg  string // main package, built once per test process
	// counters: prints one JSON line of counters (see counters) on SIGUSR1 and on exit.
	counters bool
}

var (
	ours        = impl{name: "tunnel", pkg: "github.com/wirebatch/wirebatch/examples/tunnel", counters: true}
	wireguardGo = impl{name: "wireguard-go", pkg: "github.com/wirebatch/wirebatch/netns-tests/cmd/wgpeer"}
)

// implEnv selects the implementation under test by name; "wireguard-go" runs every scenario against
// the reference implementation, which checks the scenarios' own expectations (the checks of counters
// only our tunnel reports are then left out).
const implEnv = "WIREBATCH_E2E_IMPL"

// defaultImpl runs at both ends of the scenarios when WIREBATCH_E2E_IMPL is unset.
var defaultImpl = ours

// underTest is the implementation the scenarios put at both ends unless they say otherwise.
func underTest(t testing.TB) impl {
	t.Helper()
	switch name := os.Getenv(implEnv); name {
	case "":
		return defaultImpl
	case ours.name:
		return ours
	case wireguardGo.name:
		return wireguardGo
	default:
		t.Fatalf("%s=%q: want %q or %q", implEnv, name, ours.name, wireguardGo.name)
		return impl{}
	}
}

// Fixed parameters of the topology.
const (
	listenPort = 51820
	tunIface   = "wb0"
	loadPort   = 9000 // loadgen's data and control port on the inner addresses
)

// counters is the JSON line our tunnel prints on SIGUSR1 and on exit.
type counters struct {
	SentPackets         uint64 `json:"sent_packets"`
	SentBytes           uint64 `json:"sent_bytes"`
	ReceivedPackets     uint64 `json:"received_packets"`
	ReceivedBytes       uint64 `json:"received_bytes"`
	HandshakesCompleted uint64 `json:"handshakes_completed"`
	Dropped             struct {
		NoRoute    uint64 `json:"no_route"`
		NoKey      uint64 `json:"no_key"`
		KeyExpired uint64 `json:"key_expired"`
		AuthFailed uint64 `json:"auth_failed"`
		Replay     uint64 `json:"replay"`
		BadSource  uint64 `json:"bad_source"`
		Malformed  uint64 `json:"malformed"`
	} `json:"dropped"`
}

// sub returns c minus an earlier snapshot.
func (c counters) sub(old counters) counters {
	d := c
	d.SentPackets -= old.SentPackets
	d.SentBytes -= old.SentBytes
	d.ReceivedPackets -= old.ReceivedPackets
	d.ReceivedBytes -= old.ReceivedBytes
	d.HandshakesCompleted -= old.HandshakesCompleted
	d.Dropped.NoRoute -= old.Dropped.NoRoute
	d.Dropped.NoKey -= old.Dropped.NoKey
	d.Dropped.KeyExpired -= old.Dropped.KeyExpired
	d.Dropped.AuthFailed -= old.Dropped.AuthFailed
	d.Dropped.Replay -= old.Dropped.Replay
	d.Dropped.BadSource -= old.Dropped.BadSource
	d.Dropped.Malformed -= old.Dropped.Malformed
	return d
}

// parseCounters reads the last line of out, which must be the counters object with every field.
func parseCounters(out string) (counters, error) {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	last := lines[len(lines)-1]
	var raw map[string]json.RawMessage
	if err := json.Unmarshal([]byte(last), &raw); err != nil {
		return counters{}, fmt.Errorf("counters line %q: %w", last, err)
	}
	for _, key := range []string{"sent_packets", "sent_bytes", "received_packets", "received_bytes", "handshakes_completed", "dropped"} {
		if _, ok := raw[key]; !ok {
			return counters{}, fmt.Errorf("counters line %q lacks %q", last, key)
		}
	}
	var dropped map[string]json.RawMessage
	if err := json.Unmarshal(raw["dropped"], &dropped); err != nil {
		return counters{}, fmt.Errorf("counters line %q: dropped: %w", last, err)
	}
	for _, key := range []string{"no_route", "no_key", "key_expired", "auth_failed", "replay", "bad_source", "malformed"} {
		if _, ok := dropped[key]; !ok {
			return counters{}, fmt.Errorf("counters line %q lacks dropped.%s", last, key)
		}
	}
	var c counters
	err := json.Unmarshal([]byte(last), &c)
	return c, err
}

// end is host A or B: a namespace, its keys and configuration, and the tunnel process.
type end struct {
	t     *testing.T
	label string // "A" or "B"
	ns    *harness.Namespace
	impl  impl
	bin   string
	outer netip.Addr // address on the link
	inner netip.Addr // address inside the tunnel
	key   handshake.PrivateKey
	extra []string // flags after -config and -iface
	conf  string   // path of the wg-quick file
	proc  *harness.Process
}

func (e *end) String() string { return fmt.Sprintf("%s (%s in %s)", e.label, e.impl.name, e.ns.Name) }

// topoConfig describes a topology.
type topoConfig struct {
	A, B impl
	// Relay, when not nil, puts the relay between A and B with these impairment flags (the test
	// starts it with startRelay, which adds the addresses and the seed).
	Relay []string
	// MTU is the tunnel interface's; 0 means wg-quick's 1420.
	MTU int
	// LinkMTU is the MTU of the veth links; 0 leaves the kernel's 1500.
	LinkMTU int
	// NoEndpointA and NoEndpointB leave the peer's Endpoint out of A's or B's configuration, so
	// that end can not initiate and learns its peer's address from the peer's handshake.
	NoEndpointA, NoEndpointB bool
	// ExtraA and ExtraB are additional flags of the tunnel processes.
	ExtraA, ExtraB []string
}

// topo is a built topology; the tunnels are not started yet.
type topo struct {
	t    *testing.T
	cfg  topoConfig
	A, B *end
	M    *harness.Namespace // nil without relay

	relayBin string
	relay    *harness.Process
	seed     uint64
	// relayRightPort is the port the relay sends to B from: A's address as B sees it.
	relayRightPort int
}

var (
	innerA = netip.MustParseAddr("10.77.0.1")
	innerB = netip.MustParseAddr("10.77.0.2")
)

// newTopo creates the namespaces, links and keys, and writes both ends' configurations.
func newTopo(t *testing.T, cfg topoConfig) *topo {
	t.Helper()
	harness.Require(t)
	if cfg.MTU == 0 {
		cfg.MTU = 1420
	}
	tp := &topo{t: t, cfg: cfg, relayRightPort: listenPort}
	a, b := harness.NewNamespace(t), harness.NewNamespace(t)
	for _, ns := range []*harness.Namespace{a, b} {
		// Without IPv6 on the TUN interface the kernel sends no router solicitations or MLD
		// reports into the tunnel, which would be counted as no_route drops and blur the counts.
		if out, err := nsOutput(ns, "sysctl", "-qw", "net.ipv6.conf.default.disable_ipv6=1"); err != nil {
			t.Fatalf("disabling IPv6 for new interfaces in %s: %v\n%s", ns.Name, err, out)
		}
	}
	tp.A = &end{t: t, label: "A", ns: a, impl: cfg.A, inner: innerA, outer: netip.MustParseAddr("10.201.1.1"), extra: cfg.ExtraA}
	tp.B = &end{t: t, label: "B", ns: b, impl: cfg.B, inner: innerB, extra: cfg.ExtraB}
	// Where each end sends to reach the other.
	var endpointOfB, endpointOfA netip.AddrPort
	if cfg.Relay == nil {
		harness.NewVeth(t, a, b, "wan")
		tp.B.outer = netip.MustParseAddr("10.201.1.2")
		tp.link(a, "wan", "10.201.1.1/24")
		tp.link(b, "wan", "10.201.1.2/24")
		endpointOfB = netip.AddrPortFrom(tp.B.outer, listenPort)
		endpointOfA = netip.AddrPortFrom(tp.A.outer, listenPort)
	} else {
		tp.M = harness.NewNamespace(t)
		harness.NewVeth(t, a, tp.M, "left")
		harness.NewVeth(t, tp.M, b, "right")
		tp.B.outer = netip.MustParseAddr("10.201.2.2")
		tp.link(a, "left", "10.201.1.1/24")
		tp.link(tp.M, "left", "10.201.1.2/24")
		tp.link(tp.M, "right", "10.201.2.1/24")
		tp.link(b, "right", "10.201.2.2/24")
		endpointOfB = netip.MustParseAddrPort("10.201.1.2:51820") // relay -listen
		endpointOfA = netip.MustParseAddrPort("10.201.2.1:51820") // relay -right-bind
		tp.relayBin = harness.Build(t, "github.com/wirebatch/wirebatch/netns-tests/cmd/relay")
	}
	for _, e := range []*end{tp.A, tp.B} {
		e.bin = harness.Build(t, e.impl.pkg)
		k, err := handshake.GeneratePrivateKey()
		if err != nil {
			t.Fatal(err)
		}
		e.key = k
	}
	if cfg.NoEndpointA {
		endpointOfB = netip.AddrPort{}
	}
	if cfg.NoEndpointB {
		endpointOfA = netip.AddrPort{}
	}
	dir := t.TempDir()
	tp.A.writeConfig(dir, cfg.MTU, tp.B, endpointOfB)
	tp.B.writeConfig(dir, cfg.MTU, tp.A, endpointOfA)
	return tp
}

func (tp *topo) link(ns *harness.Namespace, dev, cidr string) {
	tp.t.Helper()
	if tp.cfg.LinkMTU != 0 {
		ns.IP("link", "set", dev, "mtu", strconv.Itoa(tp.cfg.LinkMTU))
	}
	ns.AddAddr(dev, cidr)
}

// writeConfig writes e's wg-quick configuration with peer as its one peer, reached at endpoint
// (none when invalid).
func (e *end) writeConfig(dir string, mtu int, peer *end, endpoint netip.AddrPort) {
	var b strings.Builder
	fmt.Fprintf(&b, "[Interface]\nPrivateKey = %s\nListenPort = %d\nAddress = %s/24\nMTU = %d\n\n", e.key, listenPort, e.inner, mtu)
	fmt.Fprintf(&b, "[Peer]\nPublicKey = %s\nAllowedIPs = %s/32\n", peer.key.PublicKey(), peer.inner)
	if endpoint.IsValid() {
		fmt.Fprintf(&b, "Endpoint = %s\n", endpoint)
	}
	e.conf = filepath.Join(dir, e.label+".conf")
	if err := os.WriteFile(e.conf, []byte(b.String()), 0o600); err != nil {
		e.t.Fatal(err)
	}
}

// start starts both ends' tunnels and waits for their interfaces.
func (tp *topo) start() {
	tp.t.Helper()
	tp.A.start()
	tp.B.start()
}

// start runs the tunnel in e's namespace and waits until its interface carries the inner address.
func (e *end) start() {
	e.t.Helper()
	args := append([]string{"-config", e.conf, "-iface", tunIface}, e.extra...)
	e.proc = e.ns.Start(e.bin, args...)
	deadline := time.Now().Add(10 * time.Second)
	for {
		out, err := nsOutput(e.ns, "ip", "-br", "addr", "show", "dev", tunIface)
		if err == nil && strings.Contains(out, e.inner.String()+"/") && !strings.Contains(out, "DOWN") {
			// Runs before the harness stops the process: the interface's counters are still there.
			e.t.Cleanup(func() {
				if e.t.Failed() {
					out, _ := nsOutput(e.ns, "ip", "-s", "-s", "link")
					e.t.Logf("%v links at the end:\n%s", e, out)
				}
			})
			return
		}
		// Wait(0) reports "still running" unless the process has exited.
		if err := e.proc.Wait(0); err == nil || !strings.Contains(err.Error(), "still running") {
			e.t.Fatalf("%v exited while starting: %v\nstderr:\n%s", e, err, e.proc.Stderr())
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("%v: interface %s not up with %s after 10s: %s", e, tunIface, e.inner, out)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// nsOutput runs a short command in ns and returns its combined output.
func nsOutput(ns *harness.Namespace, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	out, err := ns.Command(ctx, name, args...).CombinedOutput()
	return string(out), err
}

// snapshot asks a running tunnel for its counters (SIGUSR1) and returns them; ok is false for an
// implementation that does not report counters.
func (e *end) snapshot() (c counters, ok bool) {
	e.t.Helper()
	if !e.impl.counters {
		return counters{}, false
	}
	before := strings.Count(e.proc.Stdout(), "\n")
	if err := e.proc.Cmd.Process.Signal(syscall.SIGUSR1); err != nil {
		e.t.Fatalf("%v: SIGUSR1: %v", e, err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for strings.Count(e.proc.Stdout(), "\n") == before {
		if time.Now().After(deadline) {
			e.t.Fatalf("%v printed no counters within 5s of SIGUSR1; stdout:\n%s", e, e.proc.Stdout())
		}
		time.Sleep(10 * time.Millisecond)
	}
	c, err := parseCounters(e.proc.Stdout())
	if err != nil {
		e.t.Fatalf("%v: %v", e, err)
	}
	return c, true
}

// stop interrupts e's tunnel and checks that it exits 0 and removes its interface; it returns the
// final counters (ok false for an implementation without them).
func (e *end) stop() (c counters, ok bool) {
	e.t.Helper()
	if err := e.proc.Stop(10 * time.Second); err != nil {
		e.t.Fatalf("%v did not exit cleanly on SIGINT: %v\nstderr:\n%s", e, err, e.proc.Stderr())
	}
	if out, err := nsOutput(e.ns, "ip", "link", "show", tunIface); err == nil {
		e.t.Errorf("%v exited but left its interface behind:\n%s", e, out)
	}
	if !e.impl.counters {
		return counters{}, false
	}
	c, err := parseCounters(e.proc.Stdout())
	if err != nil {
		e.t.Fatalf("%v: final counters: %v", e, err)
	}
	return c, true
}

// kill ends e's tunnel with SIGKILL, as a crash would, and waits for it; the kernel removes the TUN
// interface with the process's last file descriptor.
func (e *end) kill() {
	e.t.Helper()
	e.proc.Cmd.Process.Kill()
	e.proc.Wait(10 * time.Second)
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, err := nsOutput(e.ns, "ip", "link", "show", tunIface); err != nil {
			return
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("%v killed, but %s still exists after 5s", e, tunIface)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// relayCounts is the relay's JSON report (relay.Stats).
type relayCounts struct {
	Seed        uint64    `json:"seed"`
	LeftToRight dirCounts `json:"left_to_right"`
	RightToLeft dirCounts `json:"right_to_left"`
}

type dirCounts struct {
	Received    uint64 `json:"received"`
	Forwarded   uint64 `json:"forwarded"`
	Dropped     uint64 `json:"dropped"`
	RateLimited uint64 `json:"rate_limited"`
	Duplicated  uint64 `json:"duplicated"`
	Reordered   uint64 `json:"reordered"`
	Corrupted   uint64 `json:"corrupted"`
}

// seedEnv sets the seed of a scenario's random choices (the relay's impairments, garbage), to
// repeat a failure with the seed the test logged.
const seedEnv = "WIREBATCH_SEED"

// testSeed returns the seed from WIREBATCH_SEED, or a fresh one, and logs it.
func testSeed(t *testing.T) uint64 {
	t.Helper()
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv(seedEnv); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("%s=%q: %v", seedEnv, s, err)
		}
		seed = v
	}
	t.Logf("seed %d (repeat with %s=%d)", seed, seedEnv, seed)
	return seed
}

// startRelay starts the relay in M, with the topology's impairments when impaired is true and
// none otherwise. The impairments' seed comes from testSeed.
func (tp *topo) startRelay(impaired bool) {
	tp.t.Helper()
	seed := uint64(1) // decides nothing without impairments
	if impaired {
		if tp.seed == 0 {
			tp.seed = testSeed(tp.t)
		}
		seed = tp.seed
	}
	args := []string{"-listen", "10.201.1.2:51820", "-target", netip.AddrPortFrom(tp.B.outer, listenPort).String(),
		"-right-bind", fmt.Sprintf("10.201.2.1:%d", tp.relayRightPort), "-seed", strconv.FormatUint(seed, 10)}
	if impaired {
		args = append(args, tp.cfg.Relay...)
		tp.t.Logf("relay seed %d, impairments %s", tp.seed, strings.Join(tp.cfg.Relay, " "))
	}
	tp.relay = tp.M.Start(tp.relayBin, args...)
	waitListening(tp.t, tp.M, "udp", 51820)
}

// stopRelay stops the relay and returns its counts.
func (tp *topo) stopRelay() relayCounts {
	tp.t.Helper()
	if err := tp.relay.Stop(5 * time.Second); err != nil {
		tp.t.Fatalf("relay did not exit cleanly: %v\n%s", err, tp.relay.Stderr())
	}
	var rc relayCounts
	if err := json.Unmarshal([]byte(tp.relay.Stdout()), &rc); err != nil {
		tp.t.Fatalf("relay printed %q: %v", tp.relay.Stdout(), err)
	}
	return rc
}

// waitListening waits until a socket of proto ("udp" or "tcp") is bound to port in ns.
func waitListening(t *testing.T, ns *harness.Namespace, proto string, port int) {
	t.Helper()
	flag := map[string]string{"udp": "-Huln", "tcp": "-Htln"}[proto]
	deadline := time.Now().Add(10 * time.Second)
	for {
		out, _ := nsOutput(ns, "ss", flag, fmt.Sprintf("sport = :%d", port))
		if strings.TrimSpace(out) != "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("nothing listens on %s port %d in %s after 10s", proto, port, ns.Name)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// startLoadPair checks for leaks at the end of t, starts the implementation under test at both
// ends of a plain topology with a loadgen receiver at B, and waits until A reaches B through the
// tunnel: what several scenarios start from.
func startLoadPair(t *testing.T) *topo {
	checkLeaks(t)
	impl := underTest(t)
	tp := newTopo(t, topoConfig{A: impl, B: impl})
	tp.start()
	loadRecv(t, tp.B)
	reach(t, tp.A, tp.B, 10*time.Second)
	return tp
}

// reach sends numbered UDP probes from one end's inner address to the other's, every 20ms, until
// one arrives, and returns how long that took: the time the tunnel needs to (re)establish a
// session in that direction. It fails the test after timeout.
func reach(t *testing.T, from, to *end, timeout time.Duration) time.Duration {
	t.Helper()
	const port = 9999
	var rx, tx *net.UDPConn
	if err := to.ns.Do(func() (err error) {
		rx, err = net.ListenUDP("udp4", net.UDPAddrFromAddrPort(netip.AddrPortFrom(to.inner, port)))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer rx.Close()
	if err := from.ns.Do(func() (err error) {
		tx, err = net.DialUDP("udp4", nil, net.UDPAddrFromAddrPort(netip.AddrPortFrom(to.inner, port)))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer tx.Close()
	start := time.Now()
	buf := make([]byte, 64)
	for i := 0; time.Since(start) < timeout; i++ {
		// A send may fail while the route is settling or an ICMP error is pending; the next try
		// counts, not this one.
		tx.Write([]byte("probe " + strconv.Itoa(i)))
		rx.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
		if n, err := rx.Read(buf); err == nil && strings.HasPrefix(string(buf[:n]), "probe ") {
			return time.Since(start)
		}
	}
	t.Fatalf("no probe from %v reached %v within %v", from, to, timeout)
	return 0
}

// loadRecv runs a loadgen receiver on e's inner address and stops it (clean exit required) when
// the test ends.
func loadRecv(t *testing.T, e *end) {
	t.Helper()
	bin := harness.Build(t, "github.com/wirebatch/wirebatch/loadgen")
	p := e.ns.Start(bin, "recv", "-listen", netip.AddrPortFrom(e.inner, loadPort).String(), "-quiet")
	waitListening(t, e.ns, "tcp", loadPort)
	t.Cleanup(func() {
		if err := p.Stop(5 * time.Second); err != nil {
			t.Errorf("loadgen recv in %s: %v\n%s", e.ns.Name, err, p.Stderr())
		}
	})
}

// loadSend runs "loadgen send" from one end's inner address to the other's loadgen receiver with
// args (rate, size, duration...) and returns its report.
func loadSend(t *testing.T, from, to *end, args ...string) loadgenReport {
	t.Helper()
	bin := harness.Build(t, "github.com/wirebatch/wirebatch/loadgen")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	args = append([]string{"send", "-to", netip.AddrPortFrom(to.inner, loadPort).String(), "-json", "-quiet"}, args...)
	out := from.ns.Run(ctx, bin, args...)
	var r loadgenReport
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("loadgen %s printed %q: %v", strings.Join(args, " "), out, err)
	}
	t.Logf("%v -> %v, loadgen %s: sent %d, received %d, lost %d, duplicates %d, reordered %d, corrupt %d, stray %d, p50 %.0fµs",
		from.label, to.label, strings.Join(args[5:], " "), r.Sent, r.Received, r.Lost, r.Duplicates, r.Reordered, r.Corrupt, r.Stray, r.LatencyUS.P50)
	return r
}

// checkLeaks records the goroutines and file descriptors of the test process, and when t has ended
// (after every cleanup registered later: processes stopped, namespaces deleted) checks that both
// are back to that baseline and that none of the namespaces the test created remains.
func checkLeaks(t *testing.T) {
	t.Helper()
	harness.Require(t) // skip (or fail) before needing ip and root below
	goroutines, fds := runtime.NumGoroutine(), countFDs(t)
	namespacesBefore := ourNamespaces(t)
	t.Cleanup(func() {
		// Goroutines that copied a finished process's output may still be returning.
		deadline := time.Now().Add(5 * time.Second)
		for {
			g, f := runtime.NumGoroutine(), countFDs(t)
			if g <= goroutines && f <= fds {
				break
			}
			if time.Now().After(deadline) {
				buf := make([]byte, 1<<20)
				t.Errorf("after the test: %d goroutines (before %d), %d file descriptors (before %d)\n%s",
					g, goroutines, f, fds, buf[:runtime.Stack(buf, true)])
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		if left := ourNamespaces(t); len(left) > len(namespacesBefore) {
			t.Errorf("namespaces left after the test: %v (before: %v)", left, namespacesBefore)
		}
	})
}

func countFDs(t *testing.T) int {
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(entries)
}

// ourNamespaces lists the namespaces this test process created that still exist.
func ourNamespaces(t *testing.T) []string {
	out, err := exec.Command("ip", "netns", "list").CombinedOutput()
	if err != nil {
		t.Fatalf("ip netns list: %v\n%s", err, out)
	}
	prefix := fmt.Sprintf("%s%d-", harness.Prefix, os.Getpid())
	var names []string
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		if name, _, _ := strings.Cut(sc.Text(), " "); strings.HasPrefix(name, prefix) {
			names = append(names, name)
		}
	}
	return names
}

// snmp returns one counter of /proc/net/snmp (e.g. "Ip", "FragCreates") in ns's network stack.
func snmp(t *testing.T, ns *harness.Namespace, group, name string) uint64 {
	t.Helper()
	out, err := nsOutput(ns, "cat", "/proc/net/snmp")
	if err != nil {
		t.Fatalf("reading /proc/net/snmp in %s: %v", ns.Name, err)
	}
	var header []string
	for line := range strings.Lines(out) {
		fields := strings.Fields(line)
		if len(fields) == 0 || fields[0] != group+":" {
			continue
		}
		if header == nil {
			header = fields
			continue
		}
		for i, h := range header {
			if h == name && i < len(fields) {
				v, err := strconv.ParseUint(fields[i], 10, 64)
				if err != nil {
					t.Fatalf("/proc/net/snmp %s %s: %v", group, name, err)
				}
				return v
			}
		}
	}
	t.Fatalf("/proc/net/snmp in %s has no %s %s", ns.Name, group, name)
	return 0
}

// capture records the WireGuard transport messages (type 4) that arrive at an end's listen port
// on one of its links, read with an AF_PACKET socket in its namespace.
type capture struct {
	t        *testing.T
	fd       int
	done     chan struct{}
	msgs     [][]byte
	err      error
	stopping atomic.Bool
}

// startCapture starts capturing on dev in e's namespace.
func startCapture(t *testing.T, e *end, dev string) *capture {
	t.Helper()
	c := &capture{t: t, done: make(chan struct{})}
	proto := int(htons(unix.ETH_P_IP))
	if err := e.ns.Do(func() error {
		ifc, err := net.InterfaceByName(dev)
		if err != nil {
			return err
		}
		// SOCK_RAW (which PACKET_VNET_HDR needs): reads start with the Ethernet header.
		fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, proto)
		if err != nil {
			return err
		}
		c.fd = fd
		// A veth passes a UDP GSO super-packet (UDP_SEGMENT, which the tunnels send runs with) on
		// whole: with a virtio-net header before each read, its gso_size cuts it back into the
		// datagrams it carries.
		if err := unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_VNET_HDR, 1); err != nil {
			return err
		}
		return unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: uint16(proto), Ifindex: ifc.Index})
	}); err != nil {
		if c.fd != 0 {
			unix.Close(c.fd)
		}
		t.Fatalf("capturing on %s in %s: %v", dev, e.ns.Name, err)
	}
	// A receive timeout lets the reader notice stop.
	tv := unix.NsecToTimeval((50 * time.Millisecond).Nanoseconds())
	if err := unix.SetsockoptTimeval(c.fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		t.Fatal(err)
	}
	go c.run()
	return c
}

func (c *capture) run() {
	defer close(c.done)
	buf := make([]byte, 65536)
	for !c.stopping.Load() {
		n, from, err := unix.Recvfrom(c.fd, buf, 0)
		if errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			c.err = err
			return
		}
		if ll, ok := from.(*unix.SockaddrLinklayer); ok && ll.Pkttype == unix.PACKET_OUTGOING {
			continue
		}
		if n < virtioNetHdrLen+ethHdrLen {
			continue
		}
		// struct virtio_net_hdr (virtio 1.x section 5.1.6, little endian): gso_type at byte 1,
		// gso_size at bytes 4-5.
		gsoType, gsoSize := buf[1], int(binary.LittleEndian.Uint16(buf[4:]))
		pkt := buf[virtioNetHdrLen+ethHdrLen : n]
		// IPv4, UDP, to the listen port, a transport message.
		if len(pkt) < 20 || pkt[0]>>4 != 4 || pkt[9] != unix.IPPROTO_UDP {
			continue
		}
		ihl := int(pkt[0]&0xf) * 4
		if len(pkt) < ihl+8+1 || int(binary.BigEndian.Uint16(pkt[ihl+2:])) != listenPort || pkt[ihl+8] != 4 {
			continue
		}
		payload := pkt[ihl+8:]
		if gsoType != virtioNetHdrGSOUDPL4 || gsoSize == 0 {
			gsoSize = len(payload)
		}
		for len(payload) > 0 {
			m := payload[:min(gsoSize, len(payload))]
			c.msgs = append(c.msgs, bytes.Clone(m))
			payload = payload[len(m):]
		}
	}
}

// The virtio-net header PACKET_VNET_HDR puts before each captured packet (include/uapi/linux/virtio_net.h).
const (
	virtioNetHdrLen      = 10
	virtioNetHdrGSOUDPL4 = 5 // VIRTIO_NET_HDR_GSO_UDP_L4
	ethHdrLen            = 14
)

// stop ends the capture and returns the UDP payloads of the captured transport messages, in
// arrival order.
func (c *capture) stop() [][]byte {
	c.t.Helper()
	// Packets still queued in the kernel are read before the flag is seen only if they came first;
	// a short pause lets the last of them arrive.
	time.Sleep(100 * time.Millisecond)
	c.stopping.Store(true)
	<-c.done
	unix.Close(c.fd)
	if c.err != nil {
		c.t.Fatalf("capture: %v", c.err)
	}
	return c.msgs
}

// htons returns v in network byte order, as AF_PACKET wants its protocol.
func htons(v uint16) uint16 {
	var b [2]byte
	binary.BigEndian.PutUint16(b[:], v)
	return binary.NativeEndian.Uint16(b[:])
}
