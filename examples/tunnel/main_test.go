// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package main

// The command line without privilege: key generation against x/crypto, bad input, bad
// configuration, bad flags, and the missing-privilege error of a real run.

import (
	"bytes"
	"encoding/base64"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/crypto/curve25519"
)

// runTunnel runs the command in process with stdin in and returns its exit status and output.
func runTunnel(in string, args ...string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	code = run(args, strings.NewReader(in), &out, &errOut)
	return code, out.String(), errOut.String()
}

// TestGenkeyPubkey: genkey prints a clamped 32-byte key in base64 with a newline, as wg genkey; pubkey
// of it prints x/crypto's X25519 public key, as wg pubkey.
func TestGenkeyPubkey(t *testing.T) {
	seen := map[string]bool{}
	for range 8 {
		code, out, errOut := runTunnel("", "genkey")
		if code != 0 || errOut != "" {
			t.Fatalf("genkey: status %d, stderr %q", code, errOut)
		}
		if !strings.HasSuffix(out, "\n") || len(out) != 45 {
			t.Fatalf("genkey printed %q, want 44 base64 characters and a newline", out)
		}
		priv, err := base64.StdEncoding.DecodeString(strings.TrimSpace(out))
		if err != nil || len(priv) != 32 {
			t.Fatalf("genkey printed %q: %v", out, err)
		}
		if priv[0]&7 != 0 || priv[31]&0x80 != 0 || priv[31]&0x40 == 0 {
			t.Errorf("genkey's key %x is not clamped (RFC 7748 section 5)", priv)
		}
		if seen[out] {
			t.Fatalf("genkey repeated %q", out)
		}
		seen[out] = true

		want, err := curve25519.X25519(priv, curve25519.Basepoint)
		if err != nil {
			t.Fatal(err)
		}
		// pubkey takes the key with or without surrounding whitespace, as wg pubkey does.
		for _, in := range []string{out, strings.TrimSpace(out), "  " + out + "\n"} {
			code, pub, errOut := runTunnel(in, "pubkey")
			if code != 0 || errOut != "" {
				t.Fatalf("pubkey of %q: status %d, stderr %q", in, code, errOut)
			}
			if pub != base64.StdEncoding.EncodeToString(want)+"\n" {
				t.Fatalf("pubkey of %q printed %q, want %q", in, pub, base64.StdEncoding.EncodeToString(want))
			}
		}
	}
}

// TestGenpsk: genpsk prints 32 random bytes in base64 with a newline, as wg genpsk; unlike a private
// key, nothing is clamped.
func TestGenpsk(t *testing.T) {
	seen := map[string]bool{}
	for range 8 {
		code, out, errOut := runTunnel("", "genpsk")
		if code != 0 || errOut != "" {
			t.Fatalf("genpsk: status %d, stderr %q", code, errOut)
		}
		psk, err := base64.StdEncoding.DecodeString(strings.TrimSuffix(out, "\n"))
		if err != nil || len(psk) != 32 || !strings.HasSuffix(out, "\n") {
			t.Fatalf("genpsk printed %q: %v", out, err)
		}
		if seen[out] {
			t.Fatalf("genpsk repeated %q", out)
		}
		seen[out] = true
	}
}

// TestPubkeyKnownAnswer: the public key of RFC 7748 section 6.1's Alice.
func TestPubkeyKnownAnswer(t *testing.T) {
	alice := []byte{0x77, 0x07, 0x6d, 0x0a, 0x73, 0x18, 0xa5, 0x7d, 0x3c, 0x16, 0xc1, 0x72, 0x51, 0xb2, 0x66, 0x45,
		0xdf, 0x4c, 0x2f, 0x87, 0xeb, 0xc0, 0x99, 0x2a, 0xb1, 0x77, 0xfb, 0xa5, 0x1d, 0xb9, 0x2c, 0x2a}
	alicePublic := []byte{0x85, 0x20, 0xf0, 0x09, 0x89, 0x30, 0xa7, 0x54, 0x74, 0x8b, 0x7d, 0xdc, 0xb4, 0x3e, 0xf7, 0x5a,
		0x0d, 0xbf, 0x3a, 0x0d, 0x26, 0x38, 0x1a, 0xf4, 0xeb, 0xa4, 0xa9, 0x8e, 0xaa, 0x9b, 0x4e, 0x6a}
	code, pub, errOut := runTunnel(base64.StdEncoding.EncodeToString(alice), "pubkey")
	if code != 0 || pub != base64.StdEncoding.EncodeToString(alicePublic)+"\n" {
		t.Fatalf("status %d, printed %q (stderr %q), want %q", code, pub, errOut, base64.StdEncoding.EncodeToString(alicePublic))
	}
}

// TestPubkeyBadInput: anything but one base64 32-byte key is an error on stderr, status 1, and
// nothing on stdout.
func TestPubkeyBadInput(t *testing.T) {
	key := base64.StdEncoding.EncodeToString(make([]byte, 32))
	for _, in := range []string{
		"",
		"\n",
		"not a key",
		base64.StdEncoding.EncodeToString(make([]byte, 31)),
		base64.StdEncoding.EncodeToString(make([]byte, 33)),
		key + " " + key,
		strings.Replace(key, "A", "*", 1),
	} {
		code, out, errOut := runTunnel(in, "pubkey")
		if code != 1 || out != "" || !strings.HasPrefix(errOut, "tunnel: pubkey: ") || strings.Count(errOut, "\n") != 1 {
			t.Errorf("pubkey of %q: status %d, stdout %q, stderr %q; want status 1 and one line on stderr", in, code, out, errOut)
		}
	}
}

// TestBadConfig: a configuration error exits with status 2 and wgquick's message naming the file,
// the line and the key, before anything is created (so no privilege is needed).
func TestBadConfig(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bad.conf")
	config := "[Interface]\nPrivateKey = " + base64.StdEncoding.EncodeToString(make([]byte, 32)) + "\nListenPort = 99999\n"
	if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runTunnel("", "-config", path, "-iface", "wbtest0")
	if code != 2 || out != "" {
		t.Fatalf("status %d, stdout %q; want 2 and nothing", code, out)
	}
	if !strings.HasPrefix(errOut, "tunnel: "+path+":3: ListenPort: ") || strings.Count(errOut, "\n") != 1 {
		t.Fatalf("stderr %q, want one line naming %s:3 and ListenPort", errOut, path)
	}

	code, _, errOut = runTunnel("", "-config", filepath.Join(t.TempDir(), "missing.conf"))
	if code != 2 || !strings.Contains(errOut, "missing.conf") {
		t.Fatalf("missing file: status %d, stderr %q", code, errOut)
	}
}

// TestConfigDefaultRoute: AllowedIPs of length 0 are refused in -config mode with status 2, before
// anything is created, and the message points at wg-quick.
func TestConfigDefaultRoute(t *testing.T) {
	key := base64.StdEncoding.EncodeToString(make([]byte, 32))
	for _, allowed := range []string{"0.0.0.0/0", "10.0.0.0/8, ::/0"} {
		path := filepath.Join(t.TempDir(), "full.conf")
		config := "[Interface]\nPrivateKey = " + key + "\n\n[Peer]\nPublicKey = " + key + "\nAllowedIPs = " + allowed + "\n"
		if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
			t.Fatal(err)
		}
		code, out, errOut := runTunnel("", "-config", path, "-iface", "wbtest0")
		if code != 2 || out != "" || !strings.Contains(errOut, "WG_QUICK_USERSPACE_IMPLEMENTATION=tunnel wg-quick up") ||
			!strings.HasPrefix(errOut, "tunnel: "+path+": AllowedIPs ") {
			t.Errorf("AllowedIPs %s: status %d, stdout %q, stderr %q; want 2 and a pointer to wg-quick", allowed, code, out, errOut)
		}
	}
}

// TestUsage: unknown flags, stray arguments and a missing -config exit with status 2 and the usage;
// -h exits with 0.
func TestUsage(t *testing.T) {
	for _, args := range [][]string{
		{"-no-such-flag"},
		{},
		{"-config"},
		{"-config", "x.conf", "stray"},
		{"-iface", "wb1"},
		{"-config", "x.conf", "-rekey-after-time", "0s"},
		{"genkey", "extra"},
		{"pubkey", "extra"},
		{"genpsk", "extra"},
		{"-f"},
		{"--foreground"},
		{"-f", "wb0", "extra"},
	} {
		code, out, errOut := runTunnel("", args...)
		if code != 2 || out != "" || (!strings.Contains(errOut, "usage") && !strings.Contains(errOut, "must be positive")) {
			t.Errorf("%q: status %d, stdout %q, stderr %q; want 2 and the usage", args, code, out, errOut)
		}
	}
	if code, _, errOut := runTunnel("", "-h"); code != 0 || !strings.Contains(errOut, "-rekey-after-time") {
		t.Errorf("-h: status %d, stderr %q", code, errOut)
	}
}

// TestMissingPrivilege runs the binary without the right to create a TUN interface (as nobody, when
// the test runs as root): one clear line, status 1, no stack trace.
func TestMissingPrivilege(t *testing.T) {
	dir, err := os.MkdirTemp("", "tunnel-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil { // readable by nobody
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "tunnel")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	path := filepath.Join(dir, "ok.conf")
	config := "[Interface]\nPrivateKey = " + base64.StdEncoding.EncodeToString(make([]byte, 32)) + "\n"
	if err := os.WriteFile(path, []byte(config), 0o600); err != nil { // owner only: no warning
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-config", path, "-iface", "wbnopriv0")
	if os.Geteuid() == 0 {
		if err := os.Chown(path, 65534, 65534); err != nil { // the unprivileged run's own file
			t.Fatal(err)
		}
		setpriv, err := exec.LookPath("setpriv")
		if err != nil {
			t.Skip("running as root without setpriv(1) to drop privilege")
		}
		cmd = exec.Command(setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all", bin, "-config", path, "-iface", "wbnopriv0")
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	exit, ok := err.(*exec.ExitError)
	if !ok || exit.ExitCode() != 1 {
		t.Fatalf("run: %v, want exit status 1; stderr %q", err, stderr.String())
	}
	msg := stderr.String()
	if !strings.HasPrefix(msg, "tunnel: creating TUN interface wbnopriv0 needs root or CAP_NET_ADMIN") ||
		strings.Count(msg, "\n") != 1 || stdout.Len() != 0 {
		t.Fatalf("stderr %q, stdout %q; want one line saying root or CAP_NET_ADMIN is needed", msg, stdout.String())
	}
}
