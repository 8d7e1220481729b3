// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package device

import (
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"runtime"
	"sync"
	"testing"
	"time"

	"golang.zx2c4.com/wireguard/conn"
	"golang.zx2c4.com/wireguard/tun/tuntest"

	"github.com/wirebatch/wirebatch/dataplane"
	"github.com/wirebatch/wirebatch/handshake"
)

// chanEP is a comparable endpoint that is not an addrPort: the cache must map it by value.
type chanEP uint16

func (e chanEP) ClearSrc()           {}
func (e chanEP) SrcToString() string { return "" }
func (e chanEP) DstToString() string { return fmt.Sprintf("192.0.2.1:%d", uint16(e)) }
func (e chanEP) DstToBytes() []byte  { return nil }
func (e chanEP) DstIP() netip.Addr   { return netip.AddrFrom4([4]byte{192, 0, 2, 1}) }
func (e chanEP) SrcIP() netip.Addr   { return netip.Addr{} }

// errTransient is what a chanBind's ReceiveFunc returns for a datagram without payload.
var errTransient = errors.New("transient receive error")

// datagram is what a chanBind receives: a payload from an endpoint, or with a nil payload, an
// error.
type datagram struct {
	b  []byte
	ep chanEP
}

// chanBind is a conn.Bind with two ReceiveFuncs, each fed by a channel, that counts what it sends.
type chanBind struct {
	in    [2]chan datagram
	mu    sync.Mutex
	done  chan struct{}
	opens int
	sent  map[chanEP]int
	mark  uint32
	// refuse is an endpoint whose Sends fail; zero: none.
	refuse chanEP
}

func newChanBind() *chanBind {
	return &chanBind{in: [2]chan datagram{make(chan datagram, 64), make(chan datagram, 64)}, sent: map[chanEP]int{}}
}

func (b *chanBind) Open(port uint16) ([]conn.ReceiveFunc, uint16, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	done := make(chan struct{})
	b.done = done
	b.opens++
	var fns []conn.ReceiveFunc
	for _, in := range b.in {
		fns = append(fns, func(bufs [][]byte, sizes []int, eps []conn.Endpoint) (int, error) {
			select {
			case d := <-in:
				if d.b == nil {
					return 0, errTransient
				}
				sizes[0] = copy(bufs[0], d.b)
				eps[0] = d.ep
				return 1, nil
			case <-done:
				return 0, net.ErrClosed
			}
		})
	}
	return fns, port, nil
}

func (b *chanBind) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.done != nil {
		close(b.done)
		b.done = nil
	}
	return nil
}

func (b *chanBind) SetMark(mark uint32) error {
	b.mu.Lock()
	b.mark = mark
	b.mu.Unlock()
	return nil
}

func (b *chanBind) Send(bufs [][]byte, ep conn.Endpoint) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if ep.(chanEP) == b.refuse && b.refuse != 0 {
		return errRefused
	}
	b.sent[ep.(chanEP)] += len(bufs)
	return nil
}

var errRefused = errors.New("chanBind: endpoint refused")

func (b *chanBind) BatchSize() int { return 4 }

func (b *chanBind) ParseEndpoint(s string) (conn.Endpoint, error) {
	a, err := netip.ParseAddrPort(s)
	if err != nil {
		return nil, err
	}
	return chanEP(a.Port()), nil
}

// readOne reads datagrams from n until one arrives.
func readOne(t *testing.T, n *netBind, bufs [][]byte, sizes []int, srcs []netip.AddrPort) int {
	t.Helper()
	k, err := n.ReadBatch(bufs, sizes, srcs)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestBindAdapter(t *testing.T) {
	b := newChanBind()
	n := newNetBind(b, 1500, t.Logf)
	if n.native || n.BatchSize() != 4 {
		t.Fatalf("native %v, batch size %d: want the generic adapter with the bind's batch size", n.native, n.BatchSize())
	}
	if err := n.WriteBatch([][]byte{{1}}, []netip.AddrPort{netip.MustParseAddrPort("192.0.2.1:7")}); !errors.Is(err, errDown) {
		t.Fatalf("write while down: %v, want errDown", err)
	}
	if err := n.setMark(9); err != nil {
		t.Fatal(err)
	}
	if err := n.open(); err != nil {
		t.Fatal(err)
	}
	if b.mark != 9 {
		t.Fatalf("mark %d on the opened bind, want 9", b.mark)
	}
	if err := n.setMark(10); err != nil || b.mark != 10 {
		t.Fatalf("mark %d (%v) after setMark(10) on the open bind", b.mark, err)
	}
	bufs, sizes, srcs := [][]byte{make([]byte, 2048)}, make([]int, 1), make([]netip.AddrPort, 1)

	// Both ReceiveFuncs are read, endpoints become addresses.
	for i, ep := range []chanEP{7, 8} {
		b.in[i] <- datagram{[]byte{byte(i), 2, 3}, ep}
		readOne(t, n, bufs, sizes, srcs)
		if want := netip.MustParseAddrPort(fmt.Sprintf("192.0.2.1:%d", ep)); srcs[0] != want || sizes[0] != 3 || bufs[0][0] != byte(i) {
			t.Fatalf("receive func %d: %d bytes from %v, want 3 from %v", i, sizes[0], srcs[0], want)
		}
	}
	// A reply goes to the endpoint the datagram came from; runs to one destination share a Send.
	dst := srcs[0]
	if err := n.WriteBatch([][]byte{{1}, {2}, {3}}, []netip.AddrPort{dst, dst, netip.MustParseAddrPort("192.0.2.1:9")}); err != nil {
		t.Fatal(err)
	}
	if b.sent[8] != 2 || b.sent[9] != 1 {
		t.Fatalf("sent %v, want 2 to :8 and 1 to :9", b.sent)
	}

	// A failed receive is retried, after a pause.
	b.in[0] <- datagram{nil, 7}
	b.in[0] <- datagram{[]byte{5}, 11}
	readOne(t, n, bufs, sizes, srcs)
	if srcs[0] != netip.MustParseAddrPort("192.0.2.1:11") {
		t.Fatalf("after a failed receive: a datagram from %v", srcs[0])
	}

	// A rebind while the reader waits: it carries on with the new opening.
	got := make(chan netip.AddrPort)
	go func() {
		k, err := n.ReadBatch(bufs, sizes, srcs)
		if err != nil || k != 1 {
			t.Errorf("read across the rebind: %d, %v", k, err)
		}
		got <- srcs[0]
	}()
	if err := n.setPort(51999); err != nil {
		t.Fatal(err)
	}
	if port, _ := n.config(); port != 51999 || b.opens != 2 {
		t.Fatalf("port %d after %d opens, want 51999 after 2", port, b.opens)
	}
	b.in[1] <- datagram{[]byte{4}, 10}
	if src := <-got; src != netip.MustParseAddrPort("192.0.2.1:10") {
		t.Fatalf("read across the rebind from %v", src)
	}

	// Down: the reader waits, a write fails; Close ends the reader.
	if err := n.down(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error)
	go func() {
		_, err := n.ReadBatch(bufs, sizes, srcs)
		done <- err
	}()
	if err := n.WriteBatch([][]byte{{1}}, []netip.AddrPort{dst}); !errors.Is(err, errDown) {
		t.Fatalf("write while down: %v, want errDown", err)
	}
	n.Close()
	if err := <-done; !errors.Is(err, net.ErrClosed) {
		t.Fatalf("read after Close: %v, want net.ErrClosed", err)
	}
}

func TestBindAdapterAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	b := newChanBind()
	n := newNetBind(b, 1500, t.Logf)
	if err := n.open(); err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	bufs, sizes, srcs := [][]byte{make([]byte, 2048)}, make([]int, 1), make([]netip.AddrPort, 1)
	d := datagram{make([]byte, 100), 7}
	out := [][]byte{d.b}
	dsts := make([]netip.AddrPort, 1)
	round := func() {
		b.in[0] <- d
		readOne(t, n, bufs, sizes, srcs)
		dsts[0] = srcs[0]
		if err := n.WriteBatch(out, dsts); err != nil {
			t.Fatal(err)
		}
	}
	round() // learns the endpoint
	if allocs := testing.AllocsPerRun(100, round); allocs != 0 {
		t.Fatalf("%v allocations per datagram received and answered, want 0", allocs)
	}
}

// TestNoPrivateKeyDropsTraffic: a Device without a private key takes configuration, but sends no
// handshake for the packets routed to its peers; once it has a key, the next packet starts one.
func TestNoPrivateKeyDropsTraffic(t *testing.T) {
	b := newChanBind()
	tunc := tuntest.NewChannelTUN()
	d := NewDevice(tunc.TUN(), b, &Logger{Verbosef: t.Logf, Errorf: t.Logf})
	defer d.Close()
	if err := d.Up(); err != nil {
		t.Fatal(err)
	}
	peer, err := handshake.GeneratePrivateKey()
	if err != nil {
		t.Fatal(err)
	}
	pub := peer.PublicKey()
	if err := d.IpcSet("public_key=" + hex.EncodeToString(pub[:]) + "\nendpoint=192.0.2.1:7\nallowed_ip=10.0.0.2/32\n"); err != nil {
		t.Fatal(err)
	}
	sent := func() int {
		b.mu.Lock()
		defer b.mu.Unlock()
		return b.sent[7]
	}
	src, dst := netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.0.2")
	tunc.Outbound <- ipv4Packet(src, dst, 1)
	time.Sleep(100 * time.Millisecond)
	if n := sent(); n != 0 {
		t.Fatalf("%d datagrams sent without a private key", n)
	}
	key, err := handshake.GeneratePrivateKey()
	if err != nil {
		t.Fatal(err)
	}
	if err := d.IpcSet("private_key=" + hex.EncodeToString(key[:]) + "\n"); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for seq := uint64(2); sent() == 0; seq++ {
		if time.Now().After(deadline) {
			t.Fatal("no handshake initiation once the key was set")
		}
		tunc.Outbound <- ipv4Packet(src, dst, seq)
		time.Sleep(20 * time.Millisecond)
	}
}

// TestCloseLeavesNoGoroutine: Close stops everything a Device started, up or down, on either kind
// of bind.
func TestCloseLeavesNoGoroutine(t *testing.T) {
	before := runtime.NumGoroutine()
	for _, bind := range []conn.Bind{newChanBind(), conn.NewStdNetBind()} {
		d := NewDevice(tuntest.NewChannelTUN().TUN(), bind, nil)
		if err := d.Up(); err != nil {
			t.Fatal(err)
		}
		if err := d.IpcSet("listen_port=0\n"); err != nil {
			t.Fatal(err)
		}
		d.Close()
		<-d.Wait()
	}
	deadline := time.Now().Add(2 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			t.Fatalf("%d goroutines after Close, %d before:\n%s", runtime.NumGoroutine(), before, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// The data plane's fast paths reach the sockets through the netBind: ReadBuffers puts datagrams at
// the offset it is given, and WriteBatchReport reports the runs a bind refused, on their datagrams.
var (
	_ dataplane.UDPBufferReader = (*netBind)(nil)
	_ dataplane.UDPSendReporter = (*netBind)(nil)
)

func TestBindAdapterFastPaths(t *testing.T) {
	b := newChanBind()
	b.refuse = 2
	n := newNetBind(b, 1500, t.Logf)
	defer n.Close()
	if err := n.open(); err != nil {
		t.Fatal(err)
	}
	const offset = 16
	b.in[0] <- datagram{[]byte("fast path"), 7}
	bufs, sizes, srcs := [][]byte{make([]byte, 64), make([]byte, 64)}, make([]int, 2), make([]netip.AddrPort, 2)
	k, err := n.ReadBuffers(bufs, offset, sizes, srcs)
	if err != nil || k != 1 || string(bufs[0][offset:offset+sizes[0]]) != "fast path" || srcs[0].Port() != 7 {
		t.Fatalf("ReadBuffers: %d datagrams, %q from %v, %v", k, bufs[0][offset:offset+sizes[0]], srcs[0], err)
	}

	one, two := netip.MustParseAddrPort("192.0.2.1:1"), netip.MustParseAddrPort("192.0.2.1:2")
	out := [][]byte{[]byte("a"), []byte("b"), []byte("c"), []byte("d")}
	refused := make([]bool, len(out))
	nrefused, err := n.WriteBatchReport(out, []netip.AddrPort{one, two, two, one}, refused)
	if nrefused != 2 || !errors.Is(err, errRefused) || refused[0] || !refused[1] || !refused[2] || refused[3] {
		t.Fatalf("WriteBatchReport: %d refused %v, %v; want 2, [false true true false], errRefused", nrefused, refused, err)
	}
	if b.sent[1] != 2 || b.sent[2] != 0 {
		t.Fatalf("sent %v, want 2 to port 1 and none to port 2", b.sent)
	}

	if err := n.down(); err != nil {
		t.Fatal(err)
	}
	if nrefused, err := n.WriteBatchReport(out[:1], []netip.AddrPort{one}, refused); nrefused != 1 || !refused[0] || !errors.Is(err, errDown) {
		t.Fatalf("WriteBatchReport while down: %d refused, %v", nrefused, err)
	}
}
