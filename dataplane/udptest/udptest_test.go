// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package udptest

import (
	"errors"
	"net/netip"
	"os"
	"testing"
	"time"
)

var (
	addrA = netip.MustParseAddrPort("192.0.2.1:1")
	addrB = netip.MustParseAddrPort("192.0.2.2:2")
	addrX = netip.MustParseAddrPort("192.0.2.9:9")
)

func TestDeliverByAddress(t *testing.T) {
	nw := NewNetwork()
	a, b := nw.Listen(addrA, 4, 64), nw.Listen(addrB, 4, 64)
	if err := a.WriteBatch([][]byte{[]byte("to b"), []byte("to nobody"), []byte("to b again")}, []netip.AddrPort{addrB, addrX, addrB}); err != nil {
		t.Fatal(err)
	}
	bufs := [][]byte{make([]byte, 64), make([]byte, 64), make([]byte, 64)}
	sizes, srcs := make([]int, 3), make([]netip.AddrPort, 3)
	n, err := b.ReadBatch(bufs, sizes, srcs)
	if err != nil || n != 2 {
		t.Fatalf("ReadBatch: %d, %v", n, err)
	}
	if string(bufs[0][:sizes[0]]) != "to b" || string(bufs[1][:sizes[1]]) != "to b again" || srcs[0] != addrA || srcs[1] != addrA {
		t.Fatalf("got %q %q from %v %v", bufs[0][:sizes[0]], bufs[1][:sizes[1]], srcs[0], srcs[1])
	}
	a.Close()
	b.Close()
}

func TestCloseWakesWaiters(t *testing.T) {
	nw := NewNetwork()
	a, b := nw.Listen(addrA, 1, 64), nw.Listen(addrB, 1, 64)
	errs := make(chan error, 2)
	go func() { // the second datagram waits for room in b's queue of one
		errs <- a.WriteBatch([][]byte{[]byte("1"), []byte("2")}, []netip.AddrPort{addrB, addrB})
	}()
	go func() {
		_, err := a.ReadBatch([][]byte{make([]byte, 64)}, make([]int, 1), make([]netip.AddrPort, 1))
		errs <- err
	}()
	time.Sleep(10 * time.Millisecond)
	b.Close() // releases the writer: its datagram is dropped
	a.Close() // releases the reader
	for range 2 {
		select {
		case err := <-errs:
			if err != nil && !errors.Is(err, os.ErrClosed) {
				t.Fatal(err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("a waiter was not woken by Close")
		}
	}
	if err := a.WriteBatch([][]byte{[]byte("x")}, []netip.AddrPort{addrB}); !errors.Is(err, os.ErrClosed) {
		t.Fatalf("WriteBatch after Close: %v", err)
	}
}
