// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package dataplane_test

import (
	"bytes"
	"net/netip"
	"os"
	"sync"
	"testing"

	"github.com/wirebatch/wirebatch/dataplane"
	"github.com/wirebatch/wirebatch/dataplane/tuntest"
	"github.com/wirebatch/wirebatch/dataplane/udptest"
	"github.com/wirebatch/wirebatch/kernels"
)

// fastTUN is a third party's TUN with both optional fast paths: Read returns one queued packet,
// TryRead the rest of what is queued, and WriteGRO takes the writes (Write must not be called).
type fastTUN struct {
	queue  chan []byte
	closed chan struct{}
	once   sync.Once

	mu        sync.Mutex
	tryReads  int
	written   [][]byte
	roomy     bool // a written packet sat in a buffer with room to coalesce 64 KiB into
	plainUsed bool // Write was called
}

func newFastTUN() *fastTUN {
	return &fastTUN{queue: make(chan []byte, 1024), closed: make(chan struct{})}
}

func (f *fastTUN) Read(bufs [][]byte, sizes []int, offset int) (int, error) {
	select {
	case p := <-f.queue:
		sizes[0] = copy(bufs[0][offset:], p)
		return 1, nil
	case <-f.closed:
		return 0, os.ErrClosed
	}
}

func (f *fastTUN) TryRead(bufs [][]byte, sizes []int, offset int) (int, error) {
	f.mu.Lock()
	f.tryReads++
	f.mu.Unlock()
	n := 0
	for ; n < len(bufs); n++ {
		select {
		case p := <-f.queue:
			sizes[n] = copy(bufs[n][offset:], p)
		default:
			return n, nil
		}
	}
	return n, nil
}

func (f *fastTUN) WriteGRO(bufs [][]byte, offset int) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, b := range bufs {
		f.written = append(f.written, bytes.Clone(b[offset:]))
		f.roomy = f.roomy || cap(b) >= 65535
	}
	return 0, nil
}

func (f *fastTUN) Write(bufs [][]byte, offset int) (int, error) {
	f.mu.Lock()
	f.plainUsed = true
	f.mu.Unlock()
	return 0, nil
}

func (f *fastTUN) BatchSize() int { return 128 }
func (f *fastTUN) Close() error   { f.once.Do(func() { close(f.closed) }); return nil }

var (
	_ dataplane.TUNTryReader = (*fastTUN)(nil)
	_ dataplane.TUNGROWriter = (*fastTUN)(nil)
)

// TestTUNFastPaths: a Device tops its batches up with a TUN's TryRead and writes through its
// WriteGRO, handing over its own buffers (no move into buffers with room to coalesce into), never
// calling Write.
func TestTUNFastPaths(t *testing.T) {
	const count = 40
	nw := udptest.NewNetwork()
	fast := newFastTUN()
	recv := make(chan []byte, count)
	other := tuntest.New(1500, 1024, func(pkts [][]byte) {
		for _, p := range pkts {
			recv <- bytes.Clone(p)
		}
	})
	tuns := [2]dataplane.TUN{fast, other}
	var devs [2]*dataplane.Device
	for i := range devs {
		cp := &dataplane.StaticKeys{}
		d, err := dataplane.NewDevice(tuns[i], nw.Listen(eps[i], 1024, 2048), dataplane.Config{Handshaker: cp})
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		devs[i] = d
		o := 1 - i
		_, err = cp.AddPeer(dataplane.PeerConfig{Endpoint: eps[o], AllowedIPs: []netip.Prefix{netip.PrefixFrom(ip4[o], 32)}},
			dataplane.KeypairConfig{Suite: kernels.ChaCha20Poly1305, SendKey: key(byte(1 + i)), ReceiveKey: key(byte(1 + o)),
				LocalIndex: uint32(100 + i), RemoteIndex: uint32(100 + o), Initiator: true})
		if err != nil {
			t.Fatal(err)
		}
	}
	var out, in [][]byte
	for i := range count {
		out = append(out, packet(ip4[0], ip4[1], 200, uint32(i)))
		in = append(in, packet(ip4[1], ip4[0], 300, uint32(i)))
	}
	for _, p := range out {
		fast.queue <- p
	}
	for i, want := range out {
		if got := <-recv; !bytes.Equal(got, want) {
			t.Fatalf("outbound packet %d differs", i)
		}
	}
	if err := other.Send(in...); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the inbound packets", func() bool {
		fast.mu.Lock()
		defer fast.mu.Unlock()
		return len(fast.written) == count
	})
	fast.mu.Lock()
	defer fast.mu.Unlock()
	for i := range in {
		if !bytes.Equal(fast.written[i], in[i]) {
			t.Fatalf("inbound packet %d differs", i)
		}
	}
	if fast.tryReads == 0 || fast.plainUsed || fast.roomy {
		t.Errorf("TryRead calls %d (want some), Write called %v, packets moved to room %v", fast.tryReads, fast.plainUsed, fast.roomy)
	}
}
