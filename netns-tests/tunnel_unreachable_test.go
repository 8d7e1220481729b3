// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package netnstests

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wirebatch/wirebatch/handshake"
	"github.com/wirebatch/wirebatch/netns-tests/harness"
)

// TestTunnelUnreachablePeer: hub A with peers B and C on links of their own. Once A has a session
// with C, A's route to C's endpoint becomes prohibit (sendmmsg to it fails with EACCES); with
// traffic to C going on, a paced stream from A to B still arrives whole (at least 99.9%), and A
// counts C's refused datagrams as send errors, not as sent.
func TestTunnelUnreachablePeer(t *testing.T) {
	harness.Require(t)
	tunnel, loadgen := harness.Build(t, tunnelPkg), harness.Build(t, loadgenPk)
	na, nb, nc := harness.NewNamespace(t), harness.NewNamespace(t), harness.NewNamespace(t)
	harness.NewVeth(t, na, nb, "veth0")
	harness.NewVeth(t, na, nc, "veth1")
	na.AddAddr("veth0", "10.202.1.1/24")
	nb.AddAddr("veth0", "10.202.1.2/24")
	na.AddAddr("veth1", "10.202.2.1/24")
	nc.AddAddr("veth1", "10.202.2.2/24")
	type host struct {
		ns    *harness.Namespace
		key   handshake.PrivateKey
		inner string
		ep    string
		proc  *harness.Process
	}
	mk := func(ns *harness.Namespace, inner, ep string) *host {
		k, err := handshake.GeneratePrivateKey()
		if err != nil {
			t.Fatal(err)
		}
		return &host{ns: ns, key: k, inner: inner, ep: ep}
	}
	a, b, c := mk(na, "10.77.0.1", ""), mk(nb, "10.77.0.2", "10.202.1.2"), mk(nc, "10.77.0.3", "10.202.2.2")
	peer := func(p *host, endpoint string) string {
		pub := p.key.PublicKey()
		s := fmt.Sprintf("\n[Peer]\nPublicKey = %s\nAllowedIPs = %s/32\n", base64.StdEncoding.EncodeToString(pub[:]), p.inner)
		if endpoint != "" {
			s += "Endpoint = " + endpoint + ":51820\n"
		}
		return s
	}
	start := func(h *host, peers string) {
		config := fmt.Sprintf("[Interface]\nPrivateKey = %s\nListenPort = 51820\nAddress = %s/24\n", h.key.String(), h.inner) + peers
		path := filepath.Join(t.TempDir(), "wb0.conf")
		if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
			t.Fatal(err)
		}
		h.proc = h.ns.Start(tunnel, "-config", path, "-iface", "wb0")
		deadline := time.Now().Add(10 * time.Second)
		for !strings.Contains(h.proc.Stderr(), "wb0 up") {
			if time.Now().After(deadline) {
				t.Fatalf("wb0 not up:\n%s", h.proc.Stderr())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	start(a, peer(b, b.ep)+peer(c, c.ep))
	start(b, peer(a, "10.202.1.1"))
	start(c, peer(a, "10.202.2.1"))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// Sessions with both, then C's endpoint becomes unreachable from A.
	a.ns.Run(ctx, "ping", "-c", "1", "-W", "5", c.inner)
	a.ns.Run(ctx, "ping", "-c", "1", "-W", "5", b.inner)
	a.ns.Run(ctx, "ip", "route", "add", "prohibit", c.ep+"/32")
	toC := a.ns.Start("ping", "-i", "0.002", "-w", "6", c.inner) // traffic to C throughout

	to := b.inner + ":9000"
	recv := b.ns.Start(loadgen, "recv", "-listen", to, "-quiet")
	args := []string{"send", "-to", to, "-rate", "5000", "-size", "200", "-duration", "4s", "-json", "-quiet"}
	var out []byte
	for attempt := 0; ; attempt++ {
		var err error
		out, err = a.ns.Command(ctx, loadgen, args...).Output()
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
	recv.Stop(5 * time.Second)
	toC.Wait(10 * time.Second)
	var r loadgenReport
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("loadgen printed %q: %v", out, err)
	}
	if err := a.proc.Stop(5 * time.Second); err != nil {
		t.Logf("stopping A: %v", err)
	}
	var ca struct {
		SentPackets uint64 `json:"sent_packets"`
		SendErrors  uint64 `json:"send_errors"`
	}
	lines := strings.Split(strings.TrimSpace(a.proc.Stdout()), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &ca); err != nil {
		t.Fatalf("A's counters %q: %v", a.proc.Stdout(), err)
	}
	t.Logf("loadgen to B: sent %d, received %d, lost %d; A: sent %d, send errors %d", r.Sent, r.Received, r.Lost, ca.SentPackets, ca.SendErrors)
	if r.Sent == 0 || float64(r.Received) < 0.999*float64(r.Sent) {
		t.Errorf("B received %d of %d datagrams while C was unreachable: want at least 99.9%%", r.Received, r.Sent)
	}
	if ca.SendErrors == 0 {
		t.Errorf("A counted no send errors for the unreachable peer")
	}
}
