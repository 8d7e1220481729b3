// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package netnstests

import (
	"context"
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

// TestTunnelConfigKeepsRoutes: `tunnel -config` adds routes for allowed IPs and never replaces one
// it did not create. A peer whose allowed IPs name the veth's subnet, which the main table already
// routes, stops the tunnel with a message, and the main table is as it was, the veth's route and the
// host's default route included.
func TestTunnelConfigKeepsRoutes(t *testing.T) {
	harness.Require(t)
	tunnel := harness.Build(t, tunnelPkg)
	a, b := harness.NewPair(t)
	a.IP("route", "add", "default", "via", b.Addr)
	waitCarrier(t, a)
	before := a.IP("route", "show", "table", "main")
	k, err := handshake.GeneratePrivateKey()
	if err != nil {
		t.Fatal(err)
	}
	peer, err := handshake.GeneratePrivateKey()
	if err != nil {
		t.Fatal(err)
	}
	subnet := a.Addr[:strings.LastIndexByte(a.Addr, '.')] + ".0/24"
	config := fmt.Sprintf("[Interface]\nPrivateKey = %s\nAddress = 10.78.0.1/24\n\n[Peer]\nPublicKey = %s\nAllowedIPs = 10.80.0.0/16, %s\n",
		k, peer.PublicKey(), subnet)
	path := filepath.Join(t.TempDir(), "routes.conf")
	if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	iface := fmt.Sprintf("wq%d-%d", os.Getpid(), wqCounter.Add(1))
	out, err := a.Command(ctx, tunnel, "-config", path, "-iface", iface).CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 || !strings.Contains(string(out), "the main table already routes "+subnet) {
		t.Fatalf("tunnel: %v, output:\n%s\nwant status 1 and a message naming %s", err, out, subnet)
	}
	if after := a.IP("route", "show", "table", "main"); after != before {
		t.Errorf("the main table changed:\nbefore:\n%s\nafter:\n%s", before, after)
	}
}
