package dataplane_test

import (
	"bytes"
	"net/netip"
	"testing"
	"time"

	"github.com/wirebatch/wirebatch/dataplane"
	"github.com/wirebatch/wirebatch/dataplane/tuntest"
	"github.com/wirebatch/wirebatch/kernels"
)

// udpPair returns two sockets on laddr (port 0), closed when the test ends; it skips the test if
// the system has no such socket.
func udpPair(t *testing.T, laddr string) (a, b *dataplane.UDPConn) {
	t.Helper()
	a, err := dataplane.NewUDP(netip.MustParseAddrPort(laddr))
	if err != nil {
		t.Skipf("no %s socket: %v", laddr, err)
	}
	t.Cleanup(func() { a.Close() })
	b, err = dataplane.NewUDP(netip.MustParseAddrPort(laddr))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return a, b
}

func TestUDPConnBatch(t *testing.T) {
	for _, laddr := range []string{"127.0.0.1:0", "[::1]:0"} {
		a, b := udpPair(t, laddr)
		const n = 40
		out := make([][]byte, n)
		dsts := make([]netip.AddrPort, n)
		for i := range out {
			out[i] = bytes.Repeat([]byte{byte(i)}, 100+i)
			dsts[i] = b.LocalAddr()
		}
		if err := a.WriteBatch(out, dsts); err != nil {
			t.Fatal(err)
		}
		bufs := make([][]byte, n)
		for i := range bufs {
			bufs[i] = make([]byte, 2048)
		}
		sizes, srcs := make([]int, n), make([]netip.AddrPort, n)
		for got := 0; got < n; {
			k, err := b.ReadBatch(bufs[got:], sizes[got:], srcs[got:])
			if err != nil {
				t.Fatal(err)
			}
			got += k
		}
		for i := range out {
			if !bytes.Equal(bufs[i][:sizes[i]], out[i]) || srcs[i] != a.LocalAddr() {
				t.Fatalf("%s: datagram %d: %d bytes from %v, want %d from %v", laddr, i, sizes[i], srcs[i], len(out[i]), a.LocalAddr())
			}
		}
	}
}

// TestUDPConnDualStack: a socket on [::] exchanges datagrams with an IPv4 socket, as NewUDP
// promises; IPv4 sources come back unmapped.
func TestUDPConnDualStack(t *testing.T) {
	d, err := dataplane.NewUDP(netip.MustParseAddrPort("[::]:0"))
	if err != nil {
		t.Skipf("no IPv6 socket: %v", err)
	}
	defer d.Close()
	v4, err := dataplane.NewUDP(netip.MustParseAddrPort("127.0.0.1:0"))
	if err != nil {
		t.Fatal(err)
	}
	defer v4.Close()
	// A read that never completes fails the test instead of hanging it: closing the sockets
	// makes blocked reads return.
	timeout := time.AfterFunc(5*time.Second, func() { d.Close(); v4.Close() })
	defer timeout.Stop()
	to := netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), d.LocalAddr().Port())
	if err := v4.WriteBatch([][]byte{[]byte("ping")}, []netip.AddrPort{to}); err != nil {
		t.Fatal(err)
	}
	bufs, sizes, srcs := [][]byte{make([]byte, 64)}, make([]int, 1), make([]netip.AddrPort, 1)
	if _, err := d.ReadBatch(bufs, sizes, srcs); err != nil {
		t.Fatal(err)
	}
	if string(bufs[0][:sizes[0]]) != "ping" || srcs[0] != v4.LocalAddr() {
		t.Fatalf("got %q from %v, want ping from %v", bufs[0][:sizes[0]], srcs[0], v4.LocalAddr())
	}
	if err := d.WriteBatch([][]byte{[]byte("pong")}, srcs); err != nil {
		t.Fatalf("replying to an IPv4 source from [::]: %v", err)
	}
	if _, err := v4.ReadBatch(bufs, sizes, srcs); err != nil {
		t.Fatal(err)
	}
	if string(bufs[0][:sizes[0]]) != "pong" {
		t.Fatalf("got %q, want pong", bufs[0][:sizes[0]])
	}
}

// TestTwoDevicesRealUDP runs two devices over loopback sockets, IPv4 inside and out.
func TestTwoDevicesRealUDP(t *testing.T) {
	goroutineLeakCheck(t)
	var udps [2]*dataplane.UDPConn
	for i := range udps {
		u, err := dataplane.NewUDP(netip.MustParseAddrPort("127.0.0.1:0"))
		if err != nil {
			t.Skipf("no loopback socket: %v", err)
		}
		udps[i] = u
	}
	recv := make(chan []byte, 100)
	var devs [2]*dataplane.Device
	var cps [2]*dataplane.StaticKeys
	var tuns [2]*tuntest.TUN
	for i := range devs {
		cps[i] = &dataplane.StaticKeys{}
		tuns[i] = tuntest.New(1500, 64, func(pkts [][]byte) {
			for _, p := range pkts {
				recv <- append([]byte{}, p...)
			}
		})
		d, err := dataplane.NewDevice(tuns[i], udps[i], dataplane.Config{Workers: 1, Handshaker: cps[i]})
		if err != nil {
			t.Fatal(err)
		}
		devs[i] = d
	}
	for i := range devs {
		o := 1 - i
		if _, err := cps[i].AddPeer(dataplane.PeerConfig{Endpoint: udps[o].LocalAddr(), AllowedIPs: []netip.Prefix{netip.PrefixFrom(ip4[o], 32)}},
			dataplane.KeypairConfig{Suite: kernels.ChaCha20Poly1305, SendKey: key(byte(i + 1)), ReceiveKey: key(byte(o + 1)),
				LocalIndex: uint32(i), RemoteIndex: uint32(o), Initiator: true}); err != nil {
			t.Fatal(err)
		}
	}
	for dir := range 2 {
		p := packet(ip4[dir], ip4[1-dir], 500, uint32(dir))
		// Loopback UDP may drop under load: resend until one arrives.
		deadline := time.Now().Add(5 * time.Second)
	wait:
		for {
			if err := tuns[dir].Send(p); err != nil {
				t.Fatal(err)
			}
			select {
			case got := <-recv:
				if !bytes.Equal(got, p) {
					t.Fatalf("direction %d: got %x", dir, got)
				}
				break wait
			case <-time.After(100 * time.Millisecond):
				if time.Now().After(deadline) {
					t.Fatalf("direction %d: nothing arrived", dir)
				}
			}
		}
	}
	for _, d := range devs {
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
