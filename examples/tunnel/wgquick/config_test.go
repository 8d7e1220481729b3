// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package wgquick

import (
	"context"
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const (
	testPriv = "yAnz5TF+lXXJte14tji3zlMNq+hd2rYUIgJBgB3fBmk="
	testPub  = "xTIBA5rboUvnH4htodjb6e697QjLERt1NAB4mZqp8Dg="
	testPSK  = "FpCyhws9cxwWoV4xELtfJvjJN+zQVRPISllRWgeopVE="
)

func TestParseConfigValid(t *testing.T) {
	text := `# two peers, comments and odd spacing
[Interface]
PrivateKey = ` + testPriv + `
ListenPort=51820
Address = 10.0.0.1/24, fd00::1/64   # both families
MTU = 1400

[Peer]
PublicKey = ` + testPub + `
PresharedKey = ` + testPSK + `
AllowedIPs = 10.0.0.2/32, fd00::2/128
AllowedIPs = 192.168.50.0/24
Endpoint = 127.0.0.1:51821
PersistentKeepalive = 25

[peer]
publickey = ` + testPSK + `
AllowedIPs = 10.9.0.0/16
Endpoint = [::1]:7000
PersistentKeepalive = off
`
	cfg, err := Parse("wg0.conf", strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	ifc := cfg.Interface
	if ifc.ListenPort != 51820 || ifc.MTU != 1400 || len(ifc.Addresses) != 2 ||
		ifc.Addresses[0] != netip.MustParsePrefix("10.0.0.1/24") || ifc.Addresses[1] != netip.MustParsePrefix("fd00::1/64") {
		t.Fatalf("interface = %+v", ifc)
	}
	if want, _ := parseKey(testPriv); ifc.PrivateKey != want {
		t.Fatal("private key not decoded")
	}
	if len(cfg.Peers) != 2 {
		t.Fatalf("%d peers, want 2", len(cfg.Peers))
	}
	p0, p1 := cfg.Peers[0], cfg.Peers[1]
	if want, _ := parseKey(testPSK); p0.PresharedKey != want || p1.PublicKey != want {
		t.Fatal("preshared or second public key not decoded")
	}
	if p0.Endpoint != netip.MustParseAddrPort("127.0.0.1:51821") || p1.Endpoint != netip.MustParseAddrPort("[::1]:7000") {
		t.Fatalf("endpoints %v %v", p0.Endpoint, p1.Endpoint)
	}
	if p0.PersistentKeepalive != 25*time.Second || p1.PersistentKeepalive != 0 {
		t.Fatal("keepalive")
	}
	// AllowedIPs given twice accumulate, as in wg(8).
	if len(p0.AllowedIPs) != 3 || p0.AllowedIPs[1] != netip.MustParsePrefix("fd00::2/128") ||
		p0.AllowedIPs[2] != netip.MustParsePrefix("192.168.50.0/24") {
		t.Fatalf("allowed IPs %v", p0.AllowedIPs)
	}
	if p1.PresharedKey != [32]byte{} {
		t.Fatal("absent preshared key must be zero")
	}
}

func TestParseConfigDefaults(t *testing.T) {
	cfg, err := Parse("min.conf", strings.NewReader("[Interface]\nPrivateKey="+testPriv+"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Interface.MTU != DefaultMTU || cfg.Interface.ListenPort != 0 || len(cfg.Peers) != 0 {
		t.Fatalf("defaults: %+v", cfg)
	}
	// A bare address in AllowedIPs is a host route.
	cfg, err = Parse("x", strings.NewReader("[Interface]\nPrivateKey="+testPriv+"\n[Peer]\nPublicKey="+testPub+"\nAllowedIPs=10.1.2.3\n"))
	if err != nil || cfg.Peers[0].AllowedIPs[0] != netip.MustParsePrefix("10.1.2.3/32") {
		t.Fatalf("bare address: %v %v", err, cfg)
	}
}

func TestParseConfigErrors(t *testing.T) {
	iface := "[Interface]\nPrivateKey = " + testPriv + "\n"
	peer := "[Peer]\nPublicKey = " + testPub + "\n"
	for _, tc := range []struct {
		name, text, want string
	}{
		{"empty", "", "f.conf: no [Interface] section"},
		{"key outside section", "PrivateKey = " + testPriv + "\n", "f.conf:1: PrivateKey: key outside any section"},
		{"unknown section", "[Interfaces]\n", "f.conf:1: unknown section [Interfaces]"},
		{"no equals", iface + "ListenPort 5\n", "f.conf:3: expected Key = Value"},
		{"empty key", iface + "= 5\n", "f.conf:3: missing key"},
		{"key with a space", iface + "Listen Port = 5\n", "f.conf:3: expected Key = Value with a one-word key name"},
		{"missing private key", "[Interface]\nListenPort = 1\n", "f.conf:1: PrivateKey: missing"},
		{"bad private key", "[Interface]\nPrivateKey = abc\n", "f.conf:2: PrivateKey: not a base64 32-byte key"},
		{"short key", "[Interface]\nPrivateKey = AAAA\n", "f.conf:2: PrivateKey: not a base64 32-byte key"},
		{"second interface", iface + "[Interface]\n", "f.conf:3: second [Interface] section (first on line 1)"},
		{"bad port", iface + "ListenPort = 70000\n", "f.conf:3: ListenPort: \"70000\" is not a port number"},
		{"port word", iface + "ListenPort = auto\n", "f.conf:3: ListenPort:"},
		{"bad address", iface + "Address = 10.0.0.300/24\n", "f.conf:3: Address: \"10.0.0.300/24\" is not a CIDR prefix"},
		{"bad bare address", iface + "Address = nope\n", "f.conf:3: Address: \"nope\" is not an IP address"},
		{"empty address", iface + "Address = ,\n", "f.conf:3: Address: empty list"},
		{"small mtu", iface + "MTU = 100\n", "f.conf:3: MTU: \"100\" is not an MTU"},
		{"mtu word", iface + "MTU = big\n", "f.conf:3: MTU:"},
		{"ipv6 mtu", iface + "MTU = 1000\nAddress = fd00::1/64\n", "f.conf:3: MTU: 1000 is below IPv6's minimum"},
		{"unknown interface key", iface + "DNS = 1.1.1.1\n", "f.conf:3: DNS: unknown key in [Interface]"},
		{"duplicate key", iface + "MTU = 1400\nmtu = 1300\n", "f.conf:4: mtu: given twice in one section (first on line 3)"},
		{"peer without key", iface + "[Peer]\nAllowedIPs = 10.0.0.0/8\n", "f.conf:3: [Peer] section without PublicKey"},
		{"last peer without key", iface + peer + "[Peer]\n", "f.conf:5: [Peer] section without PublicKey"},
		{"bad public key", iface + "[Peer]\nPublicKey = !!\n", "f.conf:4: PublicKey: not a base64"},
		{"bad psk", iface + peer + "PresharedKey = x\n", "f.conf:5: PresharedKey: not a base64"},
		{"host bits", iface + peer + "AllowedIPs = 10.0.0.1/8\n", "f.conf:5: AllowedIPs: \"10.0.0.1/8\" has host bits set (did you mean 10.0.0.0/8?)"},
		{"bad prefix", iface + peer + "AllowedIPs = 10.0.0.0/33\n", "f.conf:5: AllowedIPs: \"10.0.0.0/33\" is not a CIDR prefix"},
		{"endpoint without port", iface + peer + "Endpoint = 10.0.0.1\n", "f.conf:5: Endpoint: \"10.0.0.1\" is not host:port"},
		{"endpoint port 0", iface + peer + "Endpoint = 10.0.0.1:0\n", "f.conf:5: Endpoint: \"10.0.0.1:0\" has port 0"},
		{"endpoint bad port", iface + peer + "Endpoint = host.invalid:99999\n", "f.conf:5: Endpoint: \"host.invalid:99999\" has no valid port"},
		{"endpoint unresolvable", iface + peer + "Endpoint = host.invalid:51820\n", "f.conf:5: Endpoint: cannot resolve \"host.invalid\""},
		{"bad keepalive", iface + peer + "PersistentKeepalive = -1\n", "f.conf:5: PersistentKeepalive:"},
		{"unknown peer key", iface + peer + "Endpoints = 1.2.3.4:5\n", "f.conf:5: Endpoints: unknown key in [Peer]"},
		{"duplicate peer", iface + peer + peer, "f.conf:5: PublicKey: same peer as the [Peer] on line 3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("f.conf", strings.NewReader(tc.text))
			if err == nil {
				t.Fatalf("no error, want %q", tc.want)
			}
			if !strings.HasPrefix(err.Error(), tc.want) {
				t.Fatalf("error %q, want prefix %q", err, tc.want)
			}
		})
	}
}

// TestConfigErrorsHideKeys: a malformed line that holds a key is never echoed, whether the
// separator is missing (a base64 key's '=' padding then splits it) or the key name is garbled.
func TestConfigErrorsHideKeys(t *testing.T) {
	for _, line := range []string{
		"PrivateKey " + testPriv,                         // no separator: Cut splits at the key's '='
		"PrivateKey " + strings.TrimRight(testPriv, "="), // no separator, no padding
		"PrivateKey: " + testPriv,                        // a colon for the separator
	} {
		_, err := Parse("f.conf", strings.NewReader("[Interface]\n"+line+"\n"))
		if err == nil {
			t.Fatalf("%q accepted", line)
		}
		if secret := strings.TrimRight(testPriv, "="); strings.Contains(err.Error(), secret[:8]) {
			t.Errorf("the error for a malformed key line shows the key: %v", err)
		}
	}
}

// TestLoadWarnsOnPermissions: a configuration that group or others may read loads with a warning,
// as wg-quick warns; one readable by its owner only loads without.
func TestLoadWarnsOnPermissions(t *testing.T) {
	path := filepath.Join(t.TempDir(), "wb0.conf")
	text := "[Interface]\nPrivateKey = " + testPriv + "\n"
	for _, c := range []struct {
		mode os.FileMode
		warn bool
	}{{0o600, false}, {0o640, true}, {0o644, true}, {0o400, false}} {
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(path, c.mode); err != nil {
			t.Fatal(err)
		}
		cfg, err := Load(path)
		if err != nil {
			t.Fatal(err)
		}
		if got := len(cfg.Warnings) > 0; got != c.warn {
			t.Errorf("mode %04o: warnings %q", c.mode, cfg.Warnings)
		}
		os.Remove(path)
	}
}

func TestLoadMissingFile(t *testing.T) {
	if _, err := Load(t.TempDir() + "/absent.conf"); err == nil || !strings.Contains(err.Error(), "absent.conf") {
		t.Fatalf("error %v does not name the file", err)
	}
}

// FuzzParse: whatever the text, parsing returns a configuration or an error that names the file,
// never panics, and a configuration it returns holds what the checks promise: a private key, an MTU
// in range (1280 at least with an IPv6 address), peers with distinct public keys, allowed IPs
// without host bits, endpoints with a port. Host names resolve without a network: "peer.test" to
// one address, anything else not at all.
func FuzzParse(f *testing.F) {
	iface := "[Interface]\nPrivateKey = " + testPriv + "\nListenPort = 51820\nAddress = 10.0.0.1/24, fd00::1/64\n"
	peer := "[Peer]\nPublicKey = " + testPub + "\nAllowedIPs = 10.0.0.2/32, fd00::/64\nEndpoint = peer.test:51820\nPersistentKeepalive = 25\n"
	f.Add(iface + peer)
	f.Add(iface + "MTU = 1280\n" + peer + "[Peer]\nPublicKey = " + testPSK + "\nPresharedKey = " + testPSK + "\nEndpoint = [::1]:7\n")
	f.Add("# comment\n[interface]\nprivatekey=" + testPriv + " # trailing\n\n[peer]\npublickey=" + testPub + "\nallowedips=0.0.0.0/0\n")
	f.Add(iface + peer + peer)
	f.Add("[Interface]\nMTU = 576\nAddress = 1.2.3.4\nPrivateKey = " + testPriv)
	resolve := func(_ context.Context, host string) ([]netip.Addr, error) {
		if host == "peer.test" {
			return []netip.Addr{netip.MustParseAddr("192.0.2.7")}, nil
		}
		return nil, errors.New("no such host")
	}
	f.Fuzz(func(t *testing.T, text string) {
		cfg, err := parse("fuzz.conf", strings.NewReader(text), resolve)
		if err != nil {
			if cfg != nil || !strings.HasPrefix(err.Error(), "fuzz.conf") {
				t.Fatalf("error %q (configuration %v)", err, cfg)
			}
			return
		}
		ifc := cfg.Interface
		if ifc.PrivateKey == [32]byte{} && !strings.Contains(strings.ToLower(text), "privatekey") {
			t.Fatal("a configuration without a PrivateKey line")
		}
		if ifc.MTU < minMTU || ifc.MTU > 65535 {
			t.Fatalf("MTU %d", ifc.MTU)
		}
		for _, a := range ifc.Addresses {
			if !a.IsValid() || (a.Addr().Is6() && ifc.MTU < minMTUv6) {
				t.Fatalf("address %v with MTU %d", a, ifc.MTU)
			}
		}
		keys := map[[32]byte]bool{}
		for _, p := range cfg.Peers {
			if keys[p.PublicKey] {
				t.Fatal("two peers with one public key")
			}
			keys[p.PublicKey] = true
			for _, a := range p.AllowedIPs {
				if a != a.Masked() {
					t.Fatalf("allowed IP %v has host bits", a)
				}
			}
			if p.Endpoint.IsValid() && p.Endpoint.Port() == 0 {
				t.Fatalf("endpoint %v", p.Endpoint)
			}
			if p.PersistentKeepalive < 0 || p.PersistentKeepalive > 65535*time.Second {
				t.Fatalf("keepalive %v", p.PersistentKeepalive)
			}
		}
	})
}
