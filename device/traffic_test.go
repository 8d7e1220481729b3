// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package device

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.zx2c4.com/wireguard/conn"
	"golang.zx2c4.com/wireguard/conn/bindtest"
	wgdevice "golang.zx2c4.com/wireguard/device"
	"golang.zx2c4.com/wireguard/tun/tuntest"

	"github.com/wirebatch/wirebatch/handshake"
)

// node is one end of a traffic test: a device (ours or wireguard-go's) on an in-memory TUN, with its
// tunnel address and the sequence numbers of the packets its TUN delivered.
type node struct {
	name string
	dev  uapiDevice
	tun  *tuntest.ChannelTUN
	ip   netip.Addr
	key  handshake.PrivateKey

	mu   sync.Mutex
	seen map[uint64]bool
	cond chan struct{} // closed and replaced when a packet arrives
}

func newNode(t *testing.T, name string, ours bool, bind conn.Bind, ip string) *node {
	t.Helper()
	key, err := handshake.GeneratePrivateKey()
	if err != nil {
		t.Fatal(err)
	}
	n := &node{name: name, tun: tuntest.NewChannelTUN(), ip: netip.MustParseAddr(ip), key: key,
		seen: map[uint64]bool{}, cond: make(chan struct{})}
	if ours {
		n.dev = NewDevice(n.tun.TUN(), bind, &Logger{Verbosef: t.Logf, Errorf: t.Logf})
	} else {
		n.dev = wgdevice.NewDevice(n.tun.TUN(), bind, wgdevice.NewLogger(wgdevice.LogLevelSilent, ""))
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case pkt := <-n.tun.Inbound:
				n.received(pkt)
			case <-stop:
				return
			}
		}
	}()
	t.Cleanup(func() {
		close(stop)
		<-done
		n.dev.Close()
	})
	n.set(t, "private_key="+hex.EncodeToString(key[:])+"\n")
	if err := n.dev.Up(); err != nil {
		t.Fatal(err)
	}
	return n
}

func (n *node) set(t *testing.T, conf string) {
	t.Helper()
	if err := n.dev.IpcSet(conf); err != nil {
		t.Fatalf("%s: IpcSet(%q): %v", n.name, conf, err)
	}
}

// get returns the value of the first line of IpcGet's output with key after the line after.
func (n *node) get(t *testing.T, after, key string) string {
	t.Helper()
	out, err := n.dev.IpcGet()
	if err != nil {
		t.Fatal(err)
	}
	found := after == ""
	for _, l := range strings.Split(out, "\n") {
		if l == after {
			found = true
		}
		if k, v, _ := strings.Cut(l, "="); found && k == key {
			return v
		}
	}
	return ""
}

func (n *node) port(t *testing.T) string { return n.get(t, "", "listen_port") }

func pubHex(k handshake.PrivateKey) string {
	pub := k.PublicKey()
	return hex.EncodeToString(pub[:])
}

// peerConf is the UAPI lines that make m a peer of whoever applies them, at endpoint.
func peerConf(m *node, endpoint string) string {
	return "public_key=" + pubHex(m.key) + "\nendpoint=" + endpoint + "\nreplace_allowed_ips=true\nallowed_ip=" + m.ip.String() + "/32\n"
}

func (n *node) received(pkt []byte) {
	if len(pkt) != 36 {
		return
	}
	n.mu.Lock()
	n.seen[binary.BigEndian.Uint64(pkt[28:])] = true
	close(n.cond)
	n.cond = make(chan struct{})
	n.mu.Unlock()
}

// has reports whether packet seq arrived, and returns a channel closed at the next arrival.
func (n *node) has(seq uint64) (bool, <-chan struct{}) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.seen[seq], n.cond
}

var seqs atomic.Uint64

// ping sends packets with fresh sequence numbers from n to m through the tunnel, one every 200 ms,
// until one arrives; it fails after timeout. The first packet to a peer starts a handshake and may
// be staged until it completes; later ones may be lost while a peer's configuration changes.
func ping(t *testing.T, n, m *node, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		seq := seqs.Add(1)
		select {
		case n.tun.Outbound <- ipv4Packet(n.ip, m.ip, seq):
		case <-time.After(time.Until(deadline)):
			t.Fatalf("%s's TUN took no packet", n.name)
		}
		retry := time.After(200 * time.Millisecond)
		for {
			ok, next := m.has(seq)
			if ok {
				return
			}
			select {
			case <-next:
				continue
			case <-retry:
			}
			break
		}
	}
	t.Fatalf("no packet from %s reached %s within %v", n.name, m.name, timeout)
}

// ipv4Packet is an IPv4/UDP packet of 36 bytes from src to dst whose payload is seq.
func ipv4Packet(src, dst netip.Addr, seq uint64) []byte {
	p := make([]byte, 36)
	p[0] = 0x45
	binary.BigEndian.PutUint16(p[2:], uint16(len(p)))
	p[8], p[9] = 64, 17
	s4, d4 := src.As4(), dst.As4()
	copy(p[12:], s4[:])
	copy(p[16:], d4[:])
	var sum uint32
	for i := 0; i < 20; i += 2 {
		sum += uint32(binary.BigEndian.Uint16(p[i:]))
	}
	for sum > 0xffff {
		sum = sum&0xffff + sum>>16
	}
	binary.BigEndian.PutUint16(p[10:], ^uint16(sum))
	binary.BigEndian.PutUint16(p[20:], 9)
	binary.BigEndian.PutUint16(p[22:], 9)
	binary.BigEndian.PutUint16(p[24:], 16)
	binary.BigEndian.PutUint64(p[28:], seq)
	return p
}

// both pings n to m and m to n.
func both(t *testing.T, n, m *node) {
	t.Helper()
	ping(t, n, m, 10*time.Second)
	ping(t, m, n, 10*time.Second)
}

// lastHandshake returns our Device's last handshake time with peer m, in nanoseconds.
func lastHandshake(t *testing.T, n, m *node) int64 {
	t.Helper()
	after := "public_key=" + pubHex(m.key)
	sec, err1 := strconv.ParseInt(n.get(t, after, "last_handshake_time_sec"), 10, 64)
	nsec, err2 := strconv.ParseInt(n.get(t, after, "last_handshake_time_nsec"), 10, 64)
	if err1 != nil || err2 != nil {
		t.Fatalf("%s has no last handshake time for %s", n.name, m.name)
	}
	return sec*int64(time.Second) + nsec
}

// rotateKey gives n a new private key under traffic from n to m[0], telling its peers m.
func rotateKey(t *testing.T, n *node, endpoint string, m ...*node) {
	t.Helper()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				select {
				case n.tun.Outbound <- ipv4Packet(n.ip, m[0].ip, seqs.Add(1)):
				case <-stop:
					return
				}
			}
		}
	}()
	time.Sleep(50 * time.Millisecond)
	old := n.key
	newKey, err := handshake.GeneratePrivateKey()
	if err != nil {
		t.Fatal(err)
	}
	n.key = newKey
	// The peers first: n's first initiation under the new key then finds them ready, rather than
	// being dropped and retried after REKEY_TIMEOUT.
	for _, p := range m {
		p.set(t, "public_key="+pubHex(old)+"\nremove=true\n"+peerConf(n, endpoint))
	}
	n.set(t, "private_key="+hex.EncodeToString(newKey[:])+"\n")
	if got := n.get(t, "", "private_key"); got != hex.EncodeToString(newKey[:]) {
		t.Fatalf("private_key reads %s after the change", got)
	}
	time.Sleep(50 * time.Millisecond)
	close(stop)
	wg.Wait()
}

// freeUDPPort returns a loopback UDP port that was free a moment ago.
func freeUDPPort(t *testing.T) int {
	t.Helper()
	c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	return c.LocalAddr().(*net.UDPAddr).Port
}

// TestTrafficStdNetBind runs our Device on the standard bind (its own batched sockets, on loopback)
// against two wireguard-go peers, and changes its configuration under them.
func TestTrafficStdNetBind(t *testing.T) {
	a := newNode(t, "ours", true, conn.NewStdNetBind(), "10.0.0.1")
	b := newNode(t, "wireguard-go b", false, conn.NewStdNetBind(), "10.0.0.2")
	c := newNode(t, "wireguard-go c", false, conn.NewStdNetBind(), "10.0.0.3")
	at := func(n *node) string { return "127.0.0.1:" + n.port(t) }
	for _, n := range []*node{a, b, c} {
		if n.port(t) == "" {
			t.Fatalf("%s reports no listen port while up", n.name)
		}
	}
	a.set(t, peerConf(b, at(b))+peerConf(c, at(c)))
	b.set(t, peerConf(a, at(a)))
	c.set(t, peerConf(a, at(a)))
	both(t, a, b)
	both(t, a, c)

	t.Run("private key rotated under traffic", func(t *testing.T) {
		before := lastHandshake(t, a, b)
		rotateKey(t, a, at(a), b, c)
		both(t, a, b)
		both(t, a, c)
		if after := lastHandshake(t, a, b); after <= before {
			t.Errorf("no new handshake with b after the key change (last %d, before %d)", after, before)
		}
	})

	t.Run("listen_port changed at run time", func(t *testing.T) {
		port := freeUDPPort(t)
		a.set(t, fmt.Sprintf("listen_port=%d\n", port))
		if got := a.port(t); got != strconv.Itoa(port) {
			t.Fatalf("listen_port reads %s, want %d", got, port)
		}
		// The peers learn the new port from a's authenticated packets (roaming).
		both(t, a, b)
		both(t, a, c)
		if got := b.get(t, "public_key="+pubHex(a.key), "endpoint"); got != at(a) {
			t.Errorf("b's endpoint for a is %s, want %s", got, at(a))
		}
	})

	t.Run("peer removed and re-added, the other unaffected", func(t *testing.T) {
		a.set(t, "public_key="+pubHex(b.key)+"\nremove=true\n")
		if strings.Contains(mustGet(t, a), pubHex(b.key)) {
			t.Fatal("b still listed after remove")
		}
		both(t, a, c)
		a.set(t, peerConf(b, at(b)))
		both(t, a, b)
		both(t, a, c)
	})

	t.Run("down and up", func(t *testing.T) {
		if err := a.dev.(*Device).Down(); err != nil {
			t.Fatal(err)
		}
		if err := a.dev.Up(); err != nil {
			t.Fatal(err)
		}
		both(t, a, c)
	})

	for _, m := range []*node{b, c} {
		after := "public_key=" + pubHex(m.key)
		for _, k := range []string{"tx_bytes", "rx_bytes"} {
			if v := a.get(t, after, k); v == "" || v == "0" {
				t.Errorf("%s for %s is %q after traffic", k, m.name, v)
			}
		}
	}
}

func mustGet(t *testing.T, n *node) string {
	t.Helper()
	out, err := n.dev.IpcGet()
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// channelPair returns our Device (a) and wireguard-go's (b), peers of each other on wireguard-go's
// in-memory binds, after a ping each way.
func channelPair(t *testing.T) (a, b *node) {
	t.Helper()
	binds := bindtest.NewChannelBinds()
	a = newNode(t, "ours", true, binds[0], "10.0.0.1")
	b = newNode(t, "wireguard-go", false, binds[1], "10.0.0.2")
	// bindtest names the other side by port: 1 is b as a sends to it, 2 is a as b sends to it.
	a.set(t, peerConf(b, "127.0.0.1:1"))
	b.set(t, peerConf(a, "127.0.0.1:2"))
	both(t, a, b)
	return a, b
}

// TestTrafficChannelBind runs our Device on an in-memory conn.Bind (wireguard-go's bindtest: every
// datagram through the generic bind adapter) against a wireguard-go peer.
func TestTrafficChannelBind(t *testing.T) {
	a, b := channelPair(t)

	t.Run("private key rotated under traffic", func(t *testing.T) {
		before := lastHandshake(t, a, b)
		rotateKey(t, a, "127.0.0.1:2", b)
		both(t, a, b)
		if after := lastHandshake(t, a, b); after <= before {
			t.Errorf("no new handshake after the key change (last %d, before %d)", after, before)
		}
	})

	t.Run("listen_port changed at run time", func(t *testing.T) {
		// bindtest reopens on a port of its own choosing; the rebind is what is tested.
		a.set(t, "listen_port=51999\n")
		both(t, a, b)
	})

	t.Run("peer removed and re-added", func(t *testing.T) {
		a.set(t, "public_key="+pubHex(b.key)+"\nremove=true\n")
		a.set(t, peerConf(b, "127.0.0.1:1"))
		both(t, a, b)
	})
}

// TestTransferCounters: what each side counts as sent to the other (wg show's transfer line) is
// what the other counts as received, against wireguard-go, with the handshake in the counts as
// wireguard-go and the kernel count it: transport messages whole, initiations and responses.
func TestTransferCounters(t *testing.T) {
	a, b := channelPair(t)
	count := func(n, m *node, k string) int64 {
		v, err := strconv.ParseInt(n.get(t, "public_key="+pubHex(m.key), k), 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	// The in-memory binds lose nothing, but a datagram may still be on its way when counted.
	var aTx, bRx, bTx, aRx int64
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		aTx, bRx, bTx, aRx = count(a, b, "tx_bytes"), count(b, a, "rx_bytes"), count(b, a, "tx_bytes"), count(a, b, "rx_bytes")
		if aTx == bRx && bTx == aRx {
			break
		}
	}
	if aTx != bRx || bTx != aRx {
		t.Errorf("ours sent %d bytes, wireguard-go received %d; wireguard-go sent %d, ours received %d", aTx, bRx, bTx, aRx)
	}
	if aTx < 148 || aRx < 92 {
		t.Errorf("ours counts %d bytes sent and %d received: less than the handshake's", aTx, aRx)
	}
}
