// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package main

// The daemon's command line without privilege: what is an interface name, and what is refused
// before anything is created. The daemon itself runs in netns-tests (wg-quick against wireguard-go).

import (
	"strings"
	"testing"
)

func TestDaemonArgs(t *testing.T) {
	for _, c := range []struct {
		args       []string
		iface      string
		foreground bool
		ok         bool
	}{
		{[]string{"wg0"}, "wg0", false, true},
		{[]string{"-f", "wg0"}, "wg0", true, true},
		{[]string{"--foreground", "wg0"}, "wg0", true, true},
		{[]string{}, "", false, false},
		{[]string{"-f"}, "", false, false},
		{[]string{"-f", "-config"}, "", false, false},
		{[]string{"-config", "x.conf"}, "", false, false},
		{[]string{"wg0", "wg1"}, "", false, false},
		{[]string{"-x", "wg0"}, "", false, false},
	} {
		iface, fg, ok := daemonArgs(c.args)
		if iface != c.iface || fg != c.foreground || ok != c.ok {
			t.Errorf("daemonArgs(%q) = %q, %v, %v; want %q, %v, %v", c.args, iface, fg, ok, c.iface, c.foreground, c.ok)
		}
	}
}

// TestDaemonBadInterfaceName: the name becomes a path under /var/run/wireguard, so anything but an
// interface name is refused with status 2 before anything is created.
func TestDaemonBadInterfaceName(t *testing.T) {
	for _, name := range []string{"..", ".", "a/b", "../../etc/x", "sixteen-chars-xx", "wg 0", "wg\n0", "wgé"} {
		code, out, errOut := runTunnel("", name)
		if code != 2 || out != "" || !strings.Contains(errOut, "is not an interface name") {
			t.Errorf("%q: status %d, stdout %q, stderr %q; want 2 and a message", name, code, out, errOut)
		}
	}
	for _, name := range []string{"wg0", "a", "fifteen-chars-x", "wg_0=+.-Z9"} {
		if !validInterfaceName(name) {
			t.Errorf("%q refused", name)
		}
	}
}

// TestDaemonBadLogLevel: an unknown LOG_LEVEL is a usage error, before the interface is created.
func TestDaemonBadLogLevel(t *testing.T) {
	t.Setenv(logLevelEnv, "loud")
	code, _, errOut := runTunnel("", "wbloglevel0")
	if code != 2 || !strings.Contains(errOut, "LOG_LEVEL") {
		t.Fatalf("status %d, stderr %q; want 2 naming LOG_LEVEL", code, errOut)
	}
}

// TestDaemonBadLauncherFD: WG_TUN_FD and WG_UAPI_FD must name a descriptor, 3 or more; anything
// else is a usage error, before the interface is created.
func TestDaemonBadLauncherFD(t *testing.T) {
	for _, env := range []string{tunFDEnv, uapiFDEnv} {
		for _, v := range []string{"x", "2", "-3", "1e3", " 3"} {
			t.Run(env+"="+v, func(t *testing.T) {
				t.Setenv(env, v)
				code, _, errOut := runTunnel("", "wbfd0")
				if code != 2 || !strings.Contains(errOut, env) {
					t.Fatalf("status %d, stderr %q; want 2 naming %s", code, errOut, env)
				}
			})
		}
	}
}
