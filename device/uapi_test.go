// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package device

import (
	"bufio"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.zx2c4.com/wireguard/conn"
	wgdevice "golang.zx2c4.com/wireguard/device"
	"golang.zx2c4.com/wireguard/tun/tuntest"

	"github.com/wirebatch/wirebatch/handshake"
)

// memBind is an in-memory conn.Bind for the UAPI tests: it opens on the port asked (memDefaultPort
// for 0) and refuses memBusyPort as a port in use, parses endpoints as the standard bind does,
// receives nothing and drops what is sent (both devices under test send handshake initiations to
// the peers' endpoints).
type memBind struct {
	mu   sync.Mutex
	done chan struct{} // of the current opening
}

const (
	memDefaultPort = 43210
	memBusyPort    = 1
)

func (b *memBind) Open(port uint16) ([]conn.ReceiveFunc, uint16, error) {
	if port == memBusyPort {
		return nil, 0, syscall.EADDRINUSE
	}
	if port == 0 {
		port = memDefaultPort
	}
	done := make(chan struct{})
	b.mu.Lock()
	b.done = done
	b.mu.Unlock()
	recv := func([][]byte, []int, []conn.Endpoint) (int, error) {
		<-done
		return 0, net.ErrClosed
	}
	return []conn.ReceiveFunc{recv}, port, nil
}

func (b *memBind) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.done != nil {
		close(b.done)
		b.done = nil
	}
	return nil
}

func (b *memBind) SetMark(uint32) error               { return nil }
func (b *memBind) Send([][]byte, conn.Endpoint) error { return nil }
func (b *memBind) BatchSize() int                     { return 1 }
func (b *memBind) ParseEndpoint(s string) (conn.Endpoint, error) {
	return (&conn.StdNetBind{}).ParseEndpoint(s)
}

// uapiDevice is what the conformance test needs of both implementations.
type uapiDevice interface {
	IpcSet(string) error
	IpcGet() (string, error)
	Up() error
	Close()
}

// newDevicePair returns our Device and wireguard-go's, each on an in-memory TUN and bind, both up.
func newDevicePair(t *testing.T) (ours, theirs uapiDevice) {
	t.Helper()
	ours = NewDevice(tuntest.NewChannelTUN().TUN(), &memBind{}, &Logger{Verbosef: t.Logf, Errorf: t.Logf})
	theirs = wgdevice.NewDevice(tuntest.NewChannelTUN().TUN(), &memBind{}, wgdevice.NewLogger(wgdevice.LogLevelSilent, ""))
	for _, d := range []uapiDevice{ours, theirs} {
		if err := d.Up(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(d.Close)
	}
	return ours, theirs
}

// errorCode is the errno an IpcSet error carries, 0 for none.
func errorCode(t *testing.T, err error) int64 {
	t.Helper()
	if err == nil {
		return 0
	}
	var code interface{ ErrorCode() int64 }
	if !errors.As(err, &code) {
		t.Fatalf("IpcSet error %v has no ErrorCode", err)
	}
	return code.ErrorCode()
}

// normalizedGet returns IpcGet's output without the counters and times (which depend on traffic
// and the clock) and with the peers sorted by public key (wireguard-go lists them in map order).
func normalizedGet(t *testing.T, d uapiDevice) string {
	t.Helper()
	out, err := d.IpcGet()
	if err != nil {
		t.Fatal(err)
	}
	var head []string
	var peers [][]string
	for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		k, _, _ := strings.Cut(l, "=")
		switch k {
		case "last_handshake_time_sec", "last_handshake_time_nsec", "tx_bytes", "rx_bytes":
			continue
		case "public_key":
			peers = append(peers, nil)
		}
		if len(peers) == 0 {
			head = append(head, l)
		} else {
			peers[len(peers)-1] = append(peers[len(peers)-1], l)
		}
	}
	slices.SortFunc(peers, func(a, b []string) int { return strings.Compare(a[0], b[0]) })
	for _, p := range peers {
		head = append(head, p...)
	}
	return strings.Join(head, "\n")
}

type testKeys struct {
	priv [4]string // hex private keys
	pub  [4]string // their public keys
	psk  string
}

func newTestKeys(t *testing.T) testKeys {
	var k testKeys
	for i := range k.priv {
		sk, err := handshake.GeneratePrivateKey()
		if err != nil {
			t.Fatal(err)
		}
		pk := sk.PublicKey()
		k.priv[i], k.pub[i] = hex.EncodeToString(sk[:]), hex.EncodeToString(pk[:])
	}
	psk, err := handshake.GeneratePresharedKey()
	if err != nil {
		t.Fatal(err)
	}
	k.psk = hex.EncodeToString(psk[:])
	return k
}

// TestUAPIConformance applies the same IpcSet sequences, valid and invalid, to our Device and to
// wireguard-go's, and expects the same error codes and the same IpcGet output after every step.
func TestUAPIConformance(t *testing.T) {
	k := newTestKeys(t)
	unclamped := strings.Repeat("ff", 32)
	peerA := "public_key=" + k.pub[1] + "\n"
	peerB := "public_key=" + k.pub[2] + "\n"
	full := "private_key=" + k.priv[0] + "\nlisten_port=51820\nfwmark=42\nreplace_peers=true\n" +
		peerA + "preshared_key=" + k.psk + "\nendpoint=192.0.2.1:51820\npersistent_keepalive_interval=25\n" +
		"replace_allowed_ips=true\nallowed_ip=10.0.1.1/32\nallowed_ip=10.0.0.7/24\nallowed_ip=fd00::/64\nallowed_ip=10.0.3.0/24\n" +
		peerB + "endpoint=[2001:db8::1]:1234\nallowed_ip=10.0.2.0/24\nprotocol_version=1\n"
	sequences := []struct {
		name string
		sets []string
	}{
		{"empty", []string{""}},
		{"full", []string{full}},
		{"full twice", []string{full, full}},
		{"unclamped and uppercase private key", []string{"private_key=" + unclamped + "\n", "private_key=" + strings.ToUpper(k.priv[1]) + "\n"}},
		{"zero private key", []string{full, "private_key=" + strings.Repeat("0", 64) + "\n"}},
		{"bad hex key", []string{"private_key=" + strings.Repeat("zz", 32) + "\n", "private_key=abcd\n", peerA + "preshared_key=12\n", "public_key=" + k.pub[1][:62] + "\n"}},
		{"unknown keys", []string{"foo=bar\n", full + "foo=bar\n", "protocol_version=1\n"}},
		{"line without =", []string{"private_key\n", full + "garbage\n"}},
		{"update_only for a missing peer", []string{peerA + "update_only=true\nallowed_ip=10.0.0.0/8\n"}},
		{"update_only for an existing peer", []string{full, peerA + "update_only=true\nendpoint=192.0.2.9:9\n", peerA + "update_only=false\n"}},
		{"remove", []string{full, peerA + "remove=true\n", peerB + "remove=yes\n", "public_key=" + k.pub[3] + "\nremove=true\nallowed_ip=10.0.0.0/8\n"}},
		{"replace_allowed_ips", []string{full, peerA + "replace_allowed_ips=true\nallowed_ip=10.9.0.0/16\n", peerB + "replace_allowed_ips=false\n"}},
		{"allowed_ip removal", []string{full, peerA + "allowed_ip=-10.0.0.0/24\n", peerA + "allowed_ip=-10.0.2.0/24\n", peerA + "allowed_ip=-10.0.0.0/33\n"}},
		{"allowed_ip moves between peers", []string{full, peerB + "allowed_ip=10.0.0.0/24\n", peerA + "allowed_ip=10.0.0.0/24\n"}},
		{"replace_peers", []string{full, "replace_peers=true\n" + "public_key=" + k.pub[3] + "\nallowed_ip=10.7.0.0/16\n", "replace_peers=false\n"}},
		{"listen_port", []string{"listen_port=0\n", "listen_port=51821\n", "listen_port=65536\n", "listen_port=-1\n", "listen_port=1\n", "listen_port=51822\n"}},
		{"fwmark", []string{"fwmark=7\n", "fwmark=0\n", "fwmark=4294967296\n", "fwmark=0x10\n"}},
		{"bad endpoint", []string{full, peerA + "endpoint=nonsense\n", peerA + "endpoint=192.0.2.1\n", peerA + "endpoint=[::1]:70000\n"}},
		{"allowed_ip before public_key", []string{"allowed_ip=10.0.0.0/8\n"}},
		{"protocol_version 2", []string{peerA + "protocol_version=2\n"}},
		{"persistent keepalive", []string{peerA + "persistent_keepalive_interval=65536\n", peerA + "persistent_keepalive_interval=0\n", peerA + "persistent_keepalive_interval=x\n"}},
		{"own public key is ignored", []string{"private_key=" + k.priv[0] + "\npublic_key=" + k.pub[0] + "\nallowed_ip=10.0.0.0/8\n"}},
		{"private key of a peer removes it", []string{full, "private_key=" + k.priv[1] + "\n"}},
		{"empty line ends the operation", []string{peerA + "\nfoo=bar\n"}},
		{"bad allowed_ip", []string{peerA + "allowed_ip=10.0.0.0\n", peerA + "allowed_ip=-\n"}},
	}
	for _, seq := range sequences {
		t.Run(seq.name, func(t *testing.T) {
			ours, theirs := newDevicePair(t)
			for i, set := range seq.sets {
				errOurs, errTheirs := ours.IpcSet(set), theirs.IpcSet(set)
				if a, b := errorCode(t, errOurs), errorCode(t, errTheirs); a != b {
					t.Fatalf("set %d %q: errno %d (%v), wireguard-go %d (%v)", i, set, a, errOurs, b, errTheirs)
				}
				if a, b := normalizedGet(t, ours), normalizedGet(t, theirs); a != b {
					t.Fatalf("after set %d %q:\nours:\n%s\nwireguard-go:\n%s", i, set, a, b)
				}
			}
		})
	}
}

// TestIpcHandle runs the same UAPI socket session against our Device and wireguard-go's: the same
// replies, errno lines included, apart from counters and times.
func TestIpcHandle(t *testing.T) {
	k := newTestKeys(t)
	session := []string{
		"get=1\n\n",
		"set=1\nprivate_key=" + k.priv[0] + "\nlisten_port=51820\npublic_key=" + k.pub[1] + "\nallowed_ip=10.0.0.2/32\n\n",
		"get=1\n\n",
		"set=1\nlisten_port=99999\n\n",
		"set=1\nfoo=bar\n\n",
		"get=1\nx",
	}
	ours, theirs := newDevicePair(t)
	var replies [2][]string
	for i, d := range []interface{ IpcHandle(net.Conn) }{ours.(*Device), theirs.(*wgdevice.Device)} {
		client, server := net.Pipe()
		done := make(chan struct{})
		go func() { d.IpcHandle(server); close(done) }()
		r := bufio.NewReader(client)
		for _, req := range session {
			if _, err := io.WriteString(client, req); err != nil {
				t.Fatal(err)
			}
			var reply []string
			for {
				l, err := r.ReadString('\n')
				if err != nil {
					t.Fatalf("reading the reply to %q: %v", req, err)
				}
				if l == "\n" {
					break
				}
				if k, _, _ := strings.Cut(l, "="); k == "last_handshake_time_sec" || k == "last_handshake_time_nsec" || k == "tx_bytes" || k == "rx_bytes" {
					continue
				}
				reply = append(reply, strings.TrimSuffix(l, "\n"))
			}
			replies[i] = append(replies[i], strings.Join(reply, ";"))
		}
		// An unknown operation ends the session.
		io.WriteString(client, "frobnicate=1\n")
		<-done
		client.Close()
	}
	if !slices.Equal(replies[0], replies[1]) {
		t.Fatalf("replies differ:\nours:         %q\nwireguard-go: %q", replies[0], replies[1])
	}
	if last := replies[0][len(replies[0])-1]; last != "errno=-22" {
		t.Fatalf("trailing character after get=1: reply %q, want errno=-22", last)
	}
}

// TestUAPIConformanceRandom applies a few hundred random IpcSet operations, drawn from the keys and
// values of TestUAPIConformance and their errors, to one pair of devices and compares them after
// each, so that the state carried from one operation to the next is compared too.
func TestUAPIConformanceRandom(t *testing.T) {
	k := newTestKeys(t)
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed) // printed with a failure, to replay it
	rng := rand.New(rand.NewPCG(1, seed))
	pick := func(vs ...string) string { return vs[rng.IntN(len(vs))] }
	deviceLine := func() string {
		switch rng.IntN(6) {
		case 0:
			return "private_key=" + pick(k.priv[0], k.priv[0], k.priv[1], strings.Repeat("0", 64), "zz")
		case 1:
			return "listen_port=" + pick("0", "51820", "51821", "1", "65536")
		case 2:
			return "fwmark=" + pick("0", "7", "4294967296")
		case 3:
			return "replace_peers=" + pick("true", "true", "false")
		case 4:
			return pick("foo=bar", "protocol_version=1")
		}
		return "listen_port=51822"
	}
	peerLine := func() string {
		switch rng.IntN(9) {
		case 0:
			return "update_only=" + pick("true", "true", "no")
		case 1:
			return "remove=" + pick("true", "x")
		case 2:
			return "preshared_key=" + pick(k.psk, strings.Repeat("0", 64), "12")
		case 3:
			return "endpoint=" + pick("192.0.2.1:51820", "[2001:db8::1]:1", "192.0.2.7:9", "bad")
		case 4:
			return "persistent_keepalive_interval=" + pick("0", "25", "70000")
		case 5:
			return "replace_allowed_ips=" + pick("true", "true", "false")
		case 6:
			return "protocol_version=" + pick("1", "1", "2")
		}
		return "allowed_ip=" + pick("", "-") + pick("10.0.0.0/24", "10.0.0.1/32", "10.0.0.0/8", "fd00::/64", "fd00::1/128", "0.0.0.0/0", "10.1.0.0/33")
	}
	ours, theirs := newDevicePair(t)
	for step := range 300 {
		var b strings.Builder
		for range rng.IntN(3) {
			b.WriteString(deviceLine() + "\n")
		}
		for range rng.IntN(4) {
			b.WriteString("public_key=" + pick(k.pub[0], k.pub[1], k.pub[2], k.pub[3]) + "\n")
			for range rng.IntN(5) {
				b.WriteString(peerLine() + "\n")
			}
		}
		set := b.String()
		errOurs, errTheirs := ours.IpcSet(set), theirs.IpcSet(set)
		if a, b := errorCode(t, errOurs), errorCode(t, errTheirs); a != b {
			t.Fatalf("step %d, set %q: errno %d (%v), wireguard-go %d (%v)", step, set, a, errOurs, b, errTheirs)
		}
		if a, b := normalizedGet(t, ours), normalizedGet(t, theirs); a != b {
			t.Fatalf("step %d, after set %q:\nours:\n%s\nwireguard-go:\n%s", step, set, a, b)
		}
	}
}

// TestUAPIErrorsHideKeys: a set that fails on a key names no digit of it, in the error or the log
// (wg(8) sends private and preshared keys this way).
func TestUAPIErrorsHideKeys(t *testing.T) {
	var (
		mu     sync.Mutex // the Device logs from its own goroutines too
		logged strings.Builder
	)
	logf := func(format string, args ...any) {
		mu.Lock()
		fmt.Fprintf(&logged, format+"\n", args...)
		mu.Unlock()
	}
	dev := NewDevice(tuntest.NewChannelTUN().TUN(), &memBind{}, &Logger{Verbosef: logf, Errorf: logf})
	defer dev.Close()
	const secret = "5ecae7c0ffee5ecae7c0ffee5ecae7c0ffee5ecae7c0ffee5ecae7c0ffee5ec"
	for _, conf := range []string{
		"private_key=" + secret + "g\n",  // 64 digits, one not hex
		"private_key=" + secret + "\n",   // 63 digits
		"private_key=" + secret + "00\n", // 65
		"private_key" + secret + "0\n",   // no '='
		"public_key=" + secret + "0\npreshared_key=" + secret + "x\n",
	} {
		err := dev.IpcSet(conf)
		if err == nil {
			t.Fatalf("IpcSet(%q) succeeded", conf)
		}
		mu.Lock()
		log := logged.String()
		mu.Unlock()
		if strings.Contains(err.Error(), secret[:8]) || strings.Contains(log, secret[:8]) {
			t.Errorf("IpcSet(%q): the error %q or the log %q quotes the key", conf, err, log)
		}
	}
}
