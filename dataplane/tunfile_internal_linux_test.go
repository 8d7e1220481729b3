// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package dataplane

import (
	"net/netip"
	"os"
	"runtime"
	"testing"

	"golang.org/x/sys/unix"
	"golang.zx2c4.com/wireguard/tun"

	"github.com/wirebatch/wirebatch/dataplane/udptest"
	"github.com/wirebatch/wirebatch/tunvnet"
)

// fileTUN is a TUN that exposes a file, as golang.zx2c4.com/wireguard/tun's devices do.
type fileTUN struct {
	TUN
	f *os.File
}

func (t fileTUN) File() *os.File { return t.f }

func TestTunPollerReadable(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	if newTunPoller(nopTUN{}) != nil {
		t.Fatal("a poller for a TUN without a file")
	}
	p := newTunPoller(fileTUN{f: r})
	if p.readable() {
		t.Fatal("readable with nothing written")
	}
	w.Write([]byte{1})
	if !p.readable() {
		t.Fatal("not readable with a byte waiting")
	}
	if a := testing.AllocsPerRun(100, func() { p.readable() }); a != 0 {
		t.Errorf("readable allocates %v times", a)
	}
	r.Close()
	if p.readable() {
		t.Error("readable after Close")
	}
}

// createTUN creates a TUN with golang.zx2c4.com/wireguard/tun's CreateTUN, as a tunnel does, in a
// network namespace of its own (the host sees no interface); it goes away when the test ends.
// Without root the test is skipped, or fails if WIREBATCH_NETNS=require (as for the netns tests).
func createTUN(t *testing.T) tun.Device {
	t.Helper()
	if os.Geteuid() != 0 {
		if os.Getenv("WIREBATCH_NETNS") == "require" {
			t.Fatal("creating a TUN needs root (WIREBATCH_NETNS=require)")
		}
		t.Skip("creating a TUN needs root; set WIREBATCH_NETNS=require to fail instead of skipping")
	}
	type created struct {
		dev tun.Device
		err error
	}
	ch, done := make(chan created), make(chan struct{})
	go func() {
		// Never unlocked: the thread, moved to a namespace of its own, ends with the goroutine.
		runtime.LockOSThread()
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			ch <- created{err: err}
			return
		}
		dev, err := tun.CreateTUN("wbtun0", 1420)
		ch <- created{dev, err}
		<-done // the namespace lives while its thread does
	}()
	c := <-ch
	if c.err != nil {
		t.Fatal(c.err)
	}
	t.Cleanup(func() { close(done) })
	return c.dev
}

// TestNewDeviceOffloadsCreateTUN: a Device on tun.CreateTUN's device reads and writes it through
// package tunvnet, whose fast paths it uses, and closes it in Close.
func TestNewDeviceOffloadsCreateTUN(t *testing.T) {
	dev := createTUN(t)
	d, err := NewDevice(dev, udptest.NewNetwork().Listen(netip.MustParseAddrPort("192.0.2.1:51820"), 64, 2048), Config{})
	if err != nil {
		dev.Close()
		t.Fatal(err)
	}
	_, vnet := d.tun.(*tunvnet.TUN)
	if !vnet || d.groWriter == nil || d.tunBatcher != nil {
		t.Errorf("a Device on a TUN with virtio-net headers: its TUN is a %T, GRO writer %v", d.tun, d.groWriter != nil)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := dev.File().Stat(); err == nil {
		t.Error("the TUN's file is open after Close")
	}
}

// TestOffloadTUNLeavesOthers: a TUN whose file is not a TUN with virtio-net headers, or that has
// none, is used as it is.
func TestOffloadTUNLeavesOthers(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	for _, tun := range []TUN{fileTUN{f: r}, nopTUN{}} {
		if got := offloadTUN(tun); got != tun {
			t.Errorf("%T: offloadTUN made it a %T", tun, got)
		}
	}
}
