// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

// Command tunnel is a WireGuard-compatible VPN endpoint built on wirebatch's public API: the
// dataplane Device moves packets between a TUN interface and a UDP socket, and the handshake
// ControlPlane completes handshakes and runs the timers. It is a userspace implementation for
// wg-quick, like wireguard-go, and also runs on its own from a wg-quick style configuration file;
// it interoperates with wireguard-go and the Linux kernel module.
//
//	tunnel genkey                       print a new base64 private key (as wg genkey)
//	tunnel pubkey < private.key         print the public key of a private key (as wg pubkey)
//	tunnel genpsk                       print a new base64 preshared key (as wg genpsk)
//	tunnel [-f|--foreground] INTERFACE  create INTERFACE and serve its UAPI socket (as wireguard-go)
//	tunnel -config FILE [-iface NAME]   run the tunnel until SIGINT or SIGTERM, or its interface is deleted
//
// # As wg-quick's userspace implementation
//
//	WG_QUICK_USERSPACE_IMPLEMENTATION=tunnel wg-quick up wg0
//
// Where the kernel has no WireGuard, wg-quick runs `tunnel wg0`: it creates the TUN interface wg0
// (MTU 1420, a transmit queue of wgquick.TxQueueLen packets), serves WireGuard's configuration
// protocol on /var/run/wireguard/wg0.sock with package device (so that wg show, set, setconf,
// syncconf and showconf work, fwmark included), starts with no key and no peers, and returns once
// the socket is served, the daemon going on in the background. The daemon exits, removing the
// socket, on SIGTERM or SIGINT, when the interface is deleted (wg-quick down deletes it) or when the
// socket is removed. With -f, or $WG_PROCESS_FOREGROUND set to 1, it stays in the foreground and
// logs to stderr; in the background it logs to the file named by $TUNNEL_LOG (appending), or
// nowhere. $LOG_LEVEL is verbose, error (the default) or silent. $WG_TUN_FD and $WG_UAPI_FD name an
// open TUN and a listening UAPI socket its launcher made, to serve instead of creating them. The
// variables are wireguard-go's, but for $TUNNEL_LOG.
//
// # With a configuration file
//
// `tunnel -config FILE` sets up the interface itself: addresses, MTU, and a route for each allowed
// IP its addresses' subnets do not cover. It refuses allowed IPs of length 0 (0.0.0.0/0, ::/0): a
// full tunnel needs wg-quick's policy routing, which keeps the tunnel's own UDP out of the tunnel.
// While running it logs handshakes and, every -stats-interval, one line of counters to stderr. On
// SIGUSR1, and once more on exit, it prints its counters to stdout as one line of JSON:
//
//	{"sent_packets":N,"sent_bytes":N,"received_packets":N,"received_bytes":N,"handshakes_completed":N,
//	 "dropped":{"no_route":N,"no_key":N,"key_expired":N,"auth_failed":N,"replay":N,"bad_source":N,"malformed":N},
//	 "staged":N,"staged_dropped":N,"send_errors":N,"handshake_messages":{"received":N,"queue_full":N,
//	 "accepted":N,"cookie_replies":N,"rate_limited":N,"rejected":N}}
//
// sent and received count transport data messages that were sealed or opened and passed every check
// (keepalives included), bytes whole messages (header, padding, tag); sent_packets leaves out, and
// send_errors counts, sealed messages the UDP socket refused (an unreachable or prohibited
// endpoint); handshakes_completed counts the keypairs installed; dropped counts the data plane's
// drops by verdict over both directions and all peers. A packet that finds no keypair while a
// handshake is under way is counted in no_key (or key_expired) and staged: staged counts those,
// staged_dropped the staged packets that never left. handshake_messages accounts for every
// handshake message received: queue_full ones the data plane dropped, the rest accepted, answered
// with a cookie reply (under load), rate limited or rejected by the control plane.
//
// Exit status: 0 after a signal (or, without -f, once the daemon serves), 1 when the tunnel cannot
// run (no privilege to create the interface, port in use) or stops running (its interface deleted,
// its data path dead), 2 for a bad command line or configuration.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net/netip"
	"os"
	"os/signal"
	"runtime/pprof"
	"runtime/trace"
	"strings"
	"syscall"
	"time"

	"github.com/wirebatch/wirebatch/dataplane"
	"github.com/wirebatch/wirebatch/examples/tunnel/wgquick"
	"github.com/wirebatch/wirebatch/handshake"
	"github.com/wirebatch/wirebatch/protocol"
	"github.com/wirebatch/wirebatch/udp"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// run is the whole command; it returns the exit status.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		switch args[0] {
		case "genkey":
			return genkey(args[1:], stdout, stderr)
		case "pubkey":
			return pubkey(args[1:], stdin, stdout, stderr)
		case "genpsk":
			return genpsk(args[1:], stdout, stderr)
		}
	}
	if iface, foreground, ok := daemonArgs(args); ok {
		return daemon(iface, foreground, stderr)
	}
	fs := flag.NewFlagSet("tunnel", flag.ContinueOnError)
	fs.SetOutput(stderr)
	configPath := fs.String("config", "", "wg-quick style configuration `file`")
	iface := fs.String("iface", "wb0", "`name` of the TUN interface to create")
	statsInterval := fs.Duration("stats-interval", 10*time.Second, "how often to log a line of counters to stderr (0: never)")
	workers := fs.Int("workers", 0, "encrypt and decrypt workers each (0: one per CPU)")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the run to `file` (go tool pprof), for finding where the data path spends its time")
	traceFile := fs.String("trace", "", "write an execution trace of the run to `file` (go tool trace): which goroutine waits for what, and for how long")
	// Testing knobs: they shorten the protocol's timers (WireGuard paper section 6.1) so that tests
	// see rekeys and retransmissions within seconds. Deployments keep the defaults.
	rekeyAfterTime := fs.Duration("rekey-after-time", protocol.RekeyAfterTime, "testing knob: REKEY_AFTER_TIME, the initiator's keypair age that starts a new handshake")
	rekeyTimeout := fs.Duration("rekey-timeout", protocol.RekeyTimeout, "testing knob: REKEY_TIMEOUT, the wait before an initiation is resent and the least time between initiations")
	fs.Usage = func() {
		fmt.Fprint(stderr, "usage: tunnel -config FILE [-iface NAME] [flags]\n       tunnel [-f|--foreground] INTERFACE\n"+
			"       tunnel genkey\n       tunnel pubkey < private.key\n       tunnel genpsk\n\nflags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2 // the flag package has printed the error and the usage
	}
	if *configPath == "" || fs.NArg() > 0 {
		fs.Usage()
		return 2
	}
	if *rekeyAfterTime <= 0 || *rekeyTimeout <= 0 || *statsInterval < 0 {
		fmt.Fprintln(stderr, "tunnel: -rekey-after-time and -rekey-timeout must be positive, -stats-interval not negative")
		return 2
	}
	cfg, err := wgquick.Load(*configPath)
	if err != nil {
		fmt.Fprintln(stderr, "tunnel:", err) // names file, line and key, never a key's value
		return 2
	}
	if err := wgquick.CheckRoutes(cfg); err != nil {
		fmt.Fprintf(stderr, "tunnel: %s: %v\n", *configPath, err)
		return 2
	}
	for _, w := range cfg.Warnings {
		fmt.Fprintln(stderr, "tunnel: warning:", w)
	}
	// The run's recorders, for finding where the data path spends its time; each stops (and writes
	// its file) before the file closes.
	for _, r := range []struct {
		flag, path string
		start      func(io.Writer) error
		stop       func()
	}{
		{"-cpuprofile", *cpuProfile, pprof.StartCPUProfile, pprof.StopCPUProfile},
		{"-trace", *traceFile, trace.Start, trace.Stop},
	} {
		if r.path == "" {
			continue
		}
		f, err := os.Create(r.path)
		if err != nil {
			fmt.Fprintln(stderr, "tunnel:", err)
			return 1
		}
		defer f.Close()
		if err := r.start(f); err != nil {
			fmt.Fprintf(stderr, "tunnel: %s: %v\n", r.flag, err)
			return 1
		}
		defer r.stop()
	}
	t := &tunnel{
		cfg:           cfg,
		iface:         *iface,
		workers:       *workers,
		statsInterval: *statsInterval,
		hsConfig:      handshake.Limits{RekeyAfterTime: *rekeyAfterTime, RekeyTimeout: *rekeyTimeout},
		stdout:        stdout,
		log:           log.New(stderr, "tunnel: ", log.Ltime|log.Lmicroseconds),
	}
	if err := t.run(); err != nil {
		fmt.Fprintln(stderr, "tunnel:", err)
		return 1
	}
	return 0
}

func genkey(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		fmt.Fprintln(stderr, "usage: tunnel genkey")
		return 2
	}
	k, err := handshake.GeneratePrivateKey()
	if err != nil {
		fmt.Fprintln(stderr, "tunnel: genkey:", err)
		return 1
	}
	fmt.Fprintln(stdout, k.String())
	return 0
}

func genpsk(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		fmt.Fprintln(stderr, "usage: tunnel genpsk")
		return 2
	}
	k, err := handshake.GeneratePresharedKey()
	if err != nil {
		fmt.Fprintln(stderr, "tunnel: genpsk:", err)
		return 1
	}
	fmt.Fprintln(stdout, k.String())
	return 0
}

func pubkey(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		fmt.Fprintln(stderr, "usage: tunnel pubkey < private.key")
		return 2
	}
	// A key is 44 characters; read a little more so that trailing junk is seen, not ignored.
	in, err := io.ReadAll(io.LimitReader(stdin, 1024))
	if err != nil {
		fmt.Fprintln(stderr, "tunnel: pubkey: reading standard input:", err)
		return 1
	}
	k, err := handshake.ParsePrivateKey(strings.TrimSpace(string(in)))
	if err != nil {
		fmt.Fprintln(stderr, "tunnel: pubkey:", err)
		return 1
	}
	fmt.Fprintln(stdout, k.PublicKey().String())
	return 0
}

// tunnel is one run of the tunnel from a configuration.
type tunnel struct {
	cfg           *wgquick.Config
	iface         string
	workers       int
	statsInterval time.Duration
	hsConfig      handshake.Limits
	stdout        io.Writer
	log           *log.Logger
}

// run brings the tunnel up, serves until SIGINT or SIGTERM and takes it down. Everything it creates
// goes away with the TUN device, which Device.Close closes: the interface is not persistent.
func (t *tunnel) run() error {
	// Signals first, so that a signal arriving during setup ends the run instead of the process.
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM, syscall.SIGUSR1)
	defer signal.Stop(sig)

	tun, err := wgquick.CreateTUN(t.iface, t.cfg.Interface.MTU)
	if err != nil {
		return err
	}
	conn, err := listen(t.cfg.Interface.ListenPort)
	if err != nil {
		tun.Close()
		return err
	}
	hs := handshake.NewIdentity(handshake.PrivateKey(t.cfg.Interface.PrivateKey), t.hsConfig)
	cp := handshake.NewControlPlane(hs, t.log.Printf)
	dev, err := dataplane.NewDevice(tun, conn, dataplane.Config{MTU: t.cfg.Interface.MTU, Workers: t.workers, Handshaker: cp})
	if err != nil {
		tun.Close()
		conn.Close()
		return err
	}
	// From here on the Device owns the TUN and the socket.
	defer func() {
		// Final counters after the data path has stopped, then keys destroyed.
		dev.Close()
		cp.Close()
		t.printStats(dev, cp)
		for _, p := range t.cfg.Peers {
			cp.RemovePeer(handshake.PublicKey(p.PublicKey))
		}
	}()
	for _, p := range t.cfg.Peers {
		_, err := cp.AddPeer(handshake.PeerSettings{
			PublicKey:           handshake.PublicKey(p.PublicKey),
			PresharedKey:        handshake.PresharedKey(p.PresharedKey),
			Endpoint:            p.Endpoint,
			AllowedIPs:          p.AllowedIPs,
			PersistentKeepalive: p.PersistentKeepalive,
		})
		if err != nil {
			return fmt.Errorf("peer %v: %w", handshake.PublicKey(p.PublicKey), err)
		}
	}
	if err := wgquick.ConfigureInterface(t.iface, t.cfg); err != nil {
		return err
	}
	t.log.Printf("%s up: public key %v, listening on %v, %d peers", t.iface, hs.PublicKey(), conn.LocalAddr(), len(t.cfg.Peers))
	watchDone := make(chan struct{})
	defer close(watchDone)
	deleted, err := wgquick.WatchDeleted(t.iface, watchDone)
	if err != nil {
		return fmt.Errorf("watching %s: %w", t.iface, err)
	}

	var tick <-chan time.Time
	if t.statsInterval > 0 {
		ticker := time.NewTicker(t.statsInterval)
		defer ticker.Stop()
		tick = ticker.C
	}
	for {
		select {
		case s := <-sig:
			if s == syscall.SIGUSR1 {
				t.printStats(dev, cp)
				continue
			}
			t.log.Printf("%v: shutting down", s)
			return nil
		case <-tick:
			t.logStats(dev, cp)
		case <-dev.Wait():
			// The TUN or the socket failed for good: a tunnel with a dead direction must not look
			// alive.
			return fmt.Errorf("data path stopped: %w", dev.Err())
		case <-deleted:
			return fmt.Errorf("interface %s was deleted", t.iface)
		}
	}
}

// listen opens the UDP socket: dual-stack on port, or IPv4 only where IPv6 is unavailable.
func listen(port uint16) (*udp.Conn, error) {
	conn, err := udp.Listen(netip.AddrPortFrom(netip.IPv6Unspecified(), port))
	if err == nil {
		return conn, nil
	}
	conn, err4 := udp.Listen(netip.AddrPortFrom(netip.IPv4Unspecified(), port))
	if err4 != nil {
		return nil, fmt.Errorf("listening on UDP port %d: IPv6: %w; IPv4: %w", port, err, err4)
	}
	return conn, nil
}

// counters is the JSON line of the command-line contract (see the package documentation).
type counters struct {
	SentPackets         uint64  `json:"sent_packets"`
	SentBytes           uint64  `json:"sent_bytes"`
	ReceivedPackets     uint64  `json:"received_packets"`
	ReceivedBytes       uint64  `json:"received_bytes"`
	HandshakesCompleted uint64  `json:"handshakes_completed"`
	Dropped             dropped `json:"dropped"`
	Staged              uint64  `json:"staged"`
	StagedDropped       uint64  `json:"staged_dropped"`
	SendErrors          uint64  `json:"send_errors"`
	HandshakeMessages   hsCount `json:"handshake_messages"`
}

// hsCount accounts for every handshake message received: queue_full were dropped by the data plane,
// the others handed to the control plane, which accepted, answered with a cookie, rate limited or
// rejected each.
type hsCount struct {
	Received      uint64 `json:"received"`
	QueueFull     uint64 `json:"queue_full"`
	Accepted      uint64 `json:"accepted"`
	CookieReplies uint64 `json:"cookie_replies"`
	RateLimited   uint64 `json:"rate_limited"`
	Rejected      uint64 `json:"rejected"`
}

type dropped struct {
	NoRoute    uint64 `json:"no_route"`
	NoKey      uint64 `json:"no_key"`
	KeyExpired uint64 `json:"key_expired"`
	AuthFailed uint64 `json:"auth_failed"`
	Replay     uint64 `json:"replay"`
	BadSource  uint64 `json:"bad_source"`
	Malformed  uint64 `json:"malformed"`
}

func snapshot(dev *dataplane.Device, cp *handshake.ControlPlane) counters {
	st, cs := dev.Stats(), cp.Stats()
	return counters{
		SentPackets:         st.TxPackets - st.TxErrors,
		SentBytes:           st.TxBytes,
		ReceivedPackets:     st.RxPackets,
		ReceivedBytes:       st.RxBytes,
		HandshakesCompleted: cp.KeypairsInstalled(),
		Dropped: dropped{
			NoRoute:    st.Drops[dataplane.VerdictNoRoute],
			NoKey:      st.Drops[dataplane.VerdictNoKey],
			KeyExpired: st.Drops[dataplane.VerdictKeyExpired],
			AuthFailed: st.Drops[dataplane.VerdictAuthFailed],
			Replay:     st.Drops[dataplane.VerdictReplay],
			BadSource:  st.Drops[dataplane.VerdictBadSource],
			Malformed:  st.Drops[dataplane.VerdictMalformed],
		},
		Staged:        st.Staged,
		StagedDropped: st.StagedDropped,
		SendErrors:    st.TxErrors,
		HandshakeMessages: hsCount{
			Received: st.Handshakes + st.HandshakesDropped, QueueFull: st.HandshakesDropped,
			Accepted: cs.Accepted, CookieReplies: cs.CookieReplies, RateLimited: cs.RateLimited, Rejected: cs.Rejected,
		},
	}
}

// printStats writes the counters to stdout as one JSON line.
func (t *tunnel) printStats(dev *dataplane.Device, cp *handshake.ControlPlane) {
	line, _ := json.Marshal(snapshot(dev, cp)) // a struct of integers always marshals
	fmt.Fprintf(t.stdout, "%s\n", line)
}

// logStats logs one line of counters to stderr.
func (t *tunnel) logStats(dev *dataplane.Device, cp *handshake.ControlPlane) {
	c := snapshot(dev, cp)
	d := c.Dropped
	t.log.Printf("stats: sent %d packets (%d bytes), received %d packets (%d bytes), %d handshakes, dropped: no route %d, no key %d, key expired %d, auth failed %d, replay %d, bad source %d, malformed %d",
		c.SentPackets, c.SentBytes, c.ReceivedPackets, c.ReceivedBytes, c.HandshakesCompleted,
		d.NoRoute, d.NoKey, d.KeyExpired, d.AuthFailed, d.Replay, d.BadSource, d.Malformed)
}
