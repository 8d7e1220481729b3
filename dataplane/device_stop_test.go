// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package dataplane_test

import (
	"errors"
	"net/netip"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/wirebatch/wirebatch/dataplane"
	"github.com/wirebatch/wirebatch/dataplane/tuntest"
	"github.com/wirebatch/wirebatch/dataplane/udptest"
)

// failingTUN is a TUN whose reads fail with err after fails transient ENOBUFS reads; writes and
// Close work.
type failingTUN struct {
	*tuntest.TUN
	reads atomic.Int32
	fails int32
	err   error
}

func (f *failingTUN) Read(bufs [][]byte, sizes []int, offset int) (int, error) {
	if f.reads.Add(1) <= f.fails {
		return 0, syscall.ENOBUFS
	}
	time.Sleep(time.Millisecond)
	return 0, f.err
}

// TestDeviceStopsOnDeadTUN: a TUN that fails for good (EBADFD, as a deleted TUN device reads)
// stops the Device: Wait's channel closes and Err names the TUN, after transient errors were
// retried; Close afterwards still works. A Device closed normally reports no error.
func TestDeviceStopsOnDeadTUN(t *testing.T) {
	tun := &failingTUN{TUN: tuntest.New(1500, 1, nil), fails: 3, err: syscall.EBADFD}
	udp := udptest.NewNetwork().Listen(netip.MustParseAddrPort("192.0.2.1:51820"), 1, 2048)
	dev, err := dataplane.NewDevice(tun, udp, dataplane.Config{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-dev.Wait():
	case <-time.After(5 * time.Second):
		t.Fatal("the Device kept running on a dead TUN")
	}
	if err := dev.Err(); !errors.Is(err, syscall.EBADFD) || tun.reads.Load() <= 3 {
		t.Fatalf("Err() = %v after %d reads; want EBADFD after the 3 transient ones", err, tun.reads.Load())
	}
	dev.Close()

	ok, err := dataplane.NewDevice(tuntest.New(1500, 1, nil), udptest.NewNetwork().Listen(netip.MustParseAddrPort("192.0.2.1:51820"), 1, 2048), dataplane.Config{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-ok.Wait():
		t.Fatal("a healthy Device stopped")
	case <-time.After(20 * time.Millisecond):
	}
	ok.Close()
	select {
	case <-ok.Wait():
	default:
		t.Fatal("Wait's channel is open after Close")
	}
	if err := ok.Err(); err != nil {
		t.Fatalf("Err() = %v after Close", err)
	}
}
