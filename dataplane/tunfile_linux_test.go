// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package dataplane_test

import (
	"io"
	"net/netip"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/wirebatch/wirebatch/dataplane"
	"github.com/wirebatch/wirebatch/dataplane/udptest"
	"github.com/wirebatch/wirebatch/kernels"
)

// pipeTUN is a TUN whose packets come from a pipe, one fixed-size packet per Read, as a real TUN
// returns a packet that was not offloaded; like one it exposes its file.
type pipeTUN struct {
	r, w *os.File
	size int
}

func (p *pipeTUN) File() *os.File { return p.r }
func (p *pipeTUN) Read(bufs [][]byte, sizes []int, offset int) (int, error) {
	n, err := io.ReadFull(p.r, bufs[0][offset:offset+p.size])
	if err != nil {
		return 0, err
	}
	sizes[0] = n
	return 1, nil
}
func (p *pipeTUN) Write(bufs [][]byte, offset int) (int, error) { return 0, nil }
func (p *pipeTUN) BatchSize() int                               { return 128 }
func (p *pipeTUN) Close() error                                 { p.w.Close(); return p.r.Close() }

// countingUDP records the datagrams of each WriteBatch.
type countingUDP struct {
	*udptest.Conn
	mu      sync.Mutex
	batches []int
}

func (c *countingUDP) WriteBatch(bufs [][]byte, dsts []netip.AddrPort) error {
	c.mu.Lock()
	c.batches = append(c.batches, len(bufs))
	c.mu.Unlock()
	return c.Conn.WriteBatch(bufs, dsts)
}

// TestTUNReadsToppedUp: packets waiting in a TUN that reads one packet at a time go out as one
// batch, not a batch each.
func TestTUNReadsToppedUp(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	const size, count = 100, 20
	tun := &pipeTUN{r: r, w: w, size: size}
	nw := udptest.NewNetwork()
	udp := &countingUDP{Conn: nw.Listen(eps[0], 1024, 2048)}
	nw.Listen(eps[1], 1024, 2048)
	cp := &dataplane.StaticKeys{}
	dev, err := dataplane.NewDevice(tun, udp, dataplane.Config{Handshaker: cp})
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	_, err = cp.AddPeer(dataplane.PeerConfig{Endpoint: eps[1], AllowedIPs: []netip.Prefix{netip.PrefixFrom(ip4[1], 32)}},
		dataplane.KeypairConfig{Suite: kernels.ChaCha20Poly1305, SendKey: key(1), ReceiveKey: key(2),
			LocalIndex: 1, RemoteIndex: 2, Initiator: true})
	if err != nil {
		t.Fatal(err)
	}
	var burst []byte
	for i := range count {
		burst = append(burst, packet(ip4[0], ip4[1], size, uint32(i))...)
	}
	if _, err := w.Write(burst); err != nil { // one write of less than PIPE_BUF: all there at once
		t.Fatal(err)
	}
	waitFor(t, "the packets to be sent", func() bool { return dev.Stats().TxPackets == count })
	time.Sleep(10 * time.Millisecond) // any further WriteBatch would be counted too
	udp.mu.Lock()
	defer udp.mu.Unlock()
	if len(udp.batches) != 1 {
		t.Errorf("%d packets waiting in the TUN went out in batches of %v, want one batch", count, udp.batches)
	}
}
