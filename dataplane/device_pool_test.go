// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package dataplane

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/wirebatch/wirebatch/batch"
	"github.com/wirebatch/wirebatch/dataplane/tuntest"
	"github.com/wirebatch/wirebatch/dataplane/udptest"
)

// newIdleDevice returns a Device on doubles nobody sends to, closed at the end of the test.
func newIdleDevice(t *testing.T, cfg Config) *Device {
	t.Helper()
	udp := udptest.NewNetwork().Listen(netip.MustParseAddrPort("192.0.2.1:51820"), 1, 2048)
	d, err := NewDevice(tuntest.New(max(1500, cfg.MTU), 1, nil), udp, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// TestDeviceMemory: the Device's pool has a batch for every unit of both directions and one for the
// control sends, buffers sized for the larger of MTU and PeerMTU (default 1500), and stays within
// MaxMemory, taking fewer units by default and failing when explicit Batches do not fit.
func TestDeviceMemory(t *testing.T) {
	const buf1420, buf1500, buf9000 = 1472, 1600, 9088 // (16 + MTU + 16 + 16) rounded up to 64
	b1420, b1500, b9000 := batch.BatchBytesFor(buf1420), batch.BatchBytesFor(buf1500), batch.BatchBytesFor(buf9000)
	for _, c := range []struct {
		cfg             Config
		batches, bufLen int
	}{
		{Config{Workers: 2}, 2*(2*2+2) + 1, buf1500},
		{Config{Workers: 2, PeerMTU: 1420}, 2*(2*2+2) + 1, buf1420},
		{Config{Workers: 2, MaxMemory: 6*b1500 - 1}, 5, buf1500}, // 5 fit: 2 units per direction
		{Config{Workers: 2, MTU: 9000, MaxMemory: 3 * b9000}, 3, buf9000},
		{Config{Workers: 2, PeerMTU: 9000, MaxMemory: 3 * b9000}, 3, buf9000},
		{Config{Workers: 1, Batches: 3, MaxMemory: 7 * b1420, PeerMTU: 1420}, 7, buf1420},
	} {
		d := newIdleDevice(t, c.cfg)
		if got := d.pool.Batches(); got != c.batches {
			t.Errorf("%+v: %d batches, want %d", c.cfg, got, c.batches)
		}
		if got := len(d.ctlBufs[0]); got != c.bufLen {
			t.Errorf("%+v: %d-byte buffers, want %d", c.cfg, got, c.bufLen)
		}
	}
	for _, cfg := range []Config{
		{MaxMemory: 3*b1500 - 1},
		{MTU: 9000, MaxMemory: 3 * b1420},
		{Batches: 3, MaxMemory: 6 * b1500},
		{MaxMemory: -1},
		{PeerMTU: 100},
		{PeerMTU: 70000},
	} {
		udp := udptest.NewNetwork().Listen(netip.MustParseAddrPort("192.0.2.1:51820"), 1, 2048)
		d, err := NewDevice(tuntest.New(1500, 1, nil), udp, cfg)
		if err == nil {
			d.Close()
			t.Errorf("%+v: NewDevice succeeded", cfg)
		} else if !strings.HasPrefix(err.Error(), "dataplane: ") {
			t.Errorf("%+v: error %q, want a dataplane: error", cfg, err)
		}
	}
}

// TestDeviceCloseEndsPoolWait: a reader waiting for a batch from an exhausted pool returns on Close.
func TestDeviceCloseEndsPoolWait(t *testing.T) {
	d := newIdleDevice(t, Config{Workers: 1, Batches: 1})
	// 2*1+1 batches: the control sends' and, once the idle readers have taken theirs, none.
	for deadline := time.Now().Add(5 * time.Second); d.pool.Free() > 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the readers did not take their batches: %d of %d free", d.pool.Free(), d.pool.Batches())
		}
	}
	took := make(chan bool)
	go func() { took <- d.take(&unit{}) }()
	select {
	case <-took:
		t.Fatal("take returned from an exhausted pool")
	case <-time.After(20 * time.Millisecond):
	}
	d.Close()
	select {
	case ok := <-took:
		if ok {
			t.Fatal("take got a batch after Close")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not end a wait for the pool")
	}
}

// TestDeviceBatchesWithinReplayWindow: the widest configuration keeps the counters a sender may
// have in flight out of order ((Batches+1)*batch.MaxPackets: its units and the control sends') and those a
// receiver's workers may check out of order (Batches*batch.MaxPackets) within the replay window together,
// and an explicit Batches beyond the bound is refused.
func TestDeviceBatchesWithinReplayWindow(t *testing.T) {
	d := newIdleDevice(t, Config{Workers: maxWorkers})
	batches := (d.pool.Batches() - 1) / 2
	if out, in := (batches+1)*batch.MaxPackets, batches*batch.MaxPackets; out+in > ReplayWindow {
		t.Fatalf("%d workers: %d batches per direction put %d+%d counters out of order, past the %d-counter window",
			maxWorkers, batches, out, in, ReplayWindow)
	}
	udp := udptest.NewNetwork().Listen(netip.MustParseAddrPort("192.0.2.1:51820"), 1, 2048)
	if d, err := NewDevice(tuntest.New(1500, 1, nil), udp, Config{Batches: maxBatches + 1}); err == nil {
		d.Close()
		t.Errorf("NewDevice took Batches %d", maxBatches+1)
	}
}
