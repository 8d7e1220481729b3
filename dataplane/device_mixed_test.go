// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package dataplane_test

import (
	"bytes"
	"net/netip"
	"runtime"
	"testing"
	"time"

	"github.com/wirebatch/wirebatch/dataplane"
	"github.com/wirebatch/wirebatch/dataplane/tuntest"
	"github.com/wirebatch/wirebatch/dataplane/udptest"
	"github.com/wirebatch/wirebatch/kernels"
	"github.com/wirebatch/wirebatch/protocol"
)

// blockingCP is a control plane whose HandleHandshake waits until released, to fill the queue.
type blockingCP struct {
	dataplane.StaticKeys
	release chan struct{}
	got     chan []byte
}

func (c *blockingCP) HandleHandshake(msg []byte, src netip.AddrPort) {
	<-c.release
	c.got <- append([]byte{}, msg...)
}

// TestDeviceMixedBatch sends one device a single receive batch that mixes handshake messages,
// transport messages and garbage from a new address: the handshakes go to the control plane, the
// transport messages reach the TUN in order, the garbage is counted, and the peer roams.
func TestDeviceMixedBatch(t *testing.T) {
	goroutineLeakCheck(t)
	nw := udptest.NewNetwork()
	recv := make(chan []byte, 16)
	tun := tuntest.New(1500, 16, func(pkts [][]byte) {
		for _, p := range pkts {
			recv <- append([]byte{}, p...)
		}
	})
	cp := &blockingCP{release: make(chan struct{}), got: make(chan []byte, 2000)}
	dev, err := dataplane.NewDevice(tun, nw.Listen(eps[1], 256, 2048), dataplane.Config{Workers: 2, Handshaker: cp})
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	peer, err := cp.AddPeer(dataplane.PeerConfig{Endpoint: eps[0], AllowedIPs: []netip.Prefix{netip.PrefixFrom(ip4[0], 32)}},
		dataplane.KeypairConfig{Suite: kernels.ChaCha20Poly1305, SendKey: key(2), ReceiveKey: key(1), LocalIndex: 101, RemoteIndex: 100, Initiator: true})
	if err != nil {
		t.Fatal(err)
	}

	// The sender: a bare PeerSet and encrypt stage with the other end's keys.
	set := dataplane.NewPeerSet(nil)
	other := set.AddPeer(dataplane.PeerConfig{Endpoint: eps[1], AllowedIPs: []netip.Prefix{netip.PrefixFrom(ip4[1], 32)}})
	if _, err := set.InstallKeypair(other, dataplane.KeypairConfig{Suite: kernels.ChaCha20Poly1305, SendKey: key(1), ReceiveKey: key(2), LocalIndex: 100, RemoteIndex: 101, Initiator: true}); err != nil {
		t.Fatal(err)
	}
	enc := dataplane.NewEncrypter(set, 1420)
	const off = 16
	var sent [][]byte
	seal := func(seq uint32) []byte {
		p := packet(ip4[0], ip4[1], 100+int(seq), seq)
		sent = append(sent, p)
		buf := make([]byte, 2048)
		sizes := []int{copy(buf[off:], p)}
		verdicts := []dataplane.Verdict{0}
		enc.Encrypt(dataplane.Packets{Bufs: [][]byte{buf}, Sizes: sizes, Offset: off, Peers: make([]*dataplane.Peer, 1), Verdicts: verdicts})
		if verdicts[0] != dataplane.VerdictOK {
			t.Fatal(verdicts[0])
		}
		return buf[0:sizes[0]]
	}
	hs := func(typ byte, n int) []byte {
		m := make([]byte, n)
		m[0] = typ
		return m
	}
	batch := [][]byte{
		hs(protocol.TypeInitiation, protocol.InitiationSize),
		seal(0),
		[]byte("garbage"),
		hs(protocol.TypeResponse, protocol.ResponseSize),
		seal(1),
		hs(protocol.TypeCookieReply, protocol.CookieReplySize),
		seal(2),
	}
	roamed := netip.MustParseAddrPort("198.51.100.9:7")
	src := nw.Listen(roamed, 16, 2048)
	defer src.Close()
	dsts := make([]netip.AddrPort, len(batch))
	for i := range dsts {
		dsts[i] = eps[1]
	}
	if err := src.WriteBatch(batch, dsts); err != nil {
		t.Fatal(err)
	}
	for i := range sent {
		select {
		case got := <-recv:
			if !bytes.Equal(got, sent[i]) {
				t.Fatalf("packet %d: got %x, want %x", i, got, sent[i])
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("packet %d did not arrive", i)
		}
	}
	close(cp.release)
	// The handshake goroutines (one per CPU) may hand them over in any order.
	var types [4]int
	for range 3 {
		select {
		case m := <-cp.got:
			types[m[0]&3]++
		case <-time.After(5 * time.Second):
			t.Fatalf("handshakes of types %v arrived, want one each of 1, 2 and 3", types)
		}
	}
	if types != [4]int{0, 1, 1, 1} {
		t.Fatalf("handshakes of types %v arrived, want one each of 1, 2 and 3", types)
	}
	if peer.Endpoint() != roamed {
		t.Errorf("endpoint %v, want %v after authenticated messages from there", peer.Endpoint(), roamed)
	}
	if st := dev.Stats(); st.Drops[dataplane.VerdictMalformed] != 1 || st.Handshakes != 3 || st.RxPackets != 3 {
		t.Errorf("stats %+v", st)
	}
}

// TestHandshakeQueueBounded: a control plane that lags loses handshake messages beyond its queue
// instead of stalling the data path or growing memory.
func TestHandshakeQueueBounded(t *testing.T) {
	goroutineLeakCheck(t)
	nw := udptest.NewNetwork()
	cp := &blockingCP{release: make(chan struct{}), got: make(chan []byte, 2000)}
	dev, err := dataplane.NewDevice(tuntest.New(1500, 16, nil), nw.Listen(eps[1], 1024, 2048), dataplane.Config{Workers: 1, Handshaker: cp})
	if err != nil {
		t.Fatal(err)
	}
	src := nw.Listen(eps[0], 16, 2048)
	defer src.Close()
	const n = 1500 // more than the queue of 1024 and the messages the handshake goroutines hold
	msgs := make([][]byte, n)
	dsts := make([]netip.AddrPort, n)
	for i := range msgs {
		msgs[i] = make([]byte, protocol.InitiationSize)
		msgs[i][0] = protocol.TypeInitiation
		dsts[i] = eps[1]
	}
	if err := src.WriteBatch(msgs, dsts); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "all handshakes counted", func() bool {
		st := dev.Stats()
		return st.Handshakes+st.HandshakesDropped == n
	})
	if st := dev.Stats(); st.HandshakesDropped == 0 || st.Handshakes > 1024+uint64(runtime.GOMAXPROCS(0)) {
		t.Errorf("handshakes %d queued, %d dropped: the queue is not bounded", st.Handshakes, st.HandshakesDropped)
	}
	close(cp.release)
	dev.Close()
	if got := uint64(len(cp.got)); got != dev.Stats().Handshakes {
		t.Errorf("control plane got %d handshakes, %d were queued", got, dev.Stats().Handshakes)
	}
}
