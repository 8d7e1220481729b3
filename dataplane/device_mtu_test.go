// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package dataplane_test

import (
	"bytes"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/wirebatch/wirebatch/batch"
	"github.com/wirebatch/wirebatch/dataplane"
)

// TestDeviceMTU sends packets of the full MTU and shorter both ways through two devices, at MTUs
// whose buffers are shorter than the batch package's default length (576, 1420), longer (1504: its
// largest datagram is 1536 bytes, which must not fill a buffer and pass for truncated) and jumbo
// (9000).
func TestDeviceMTU(t *testing.T) {
	for _, mtu := range []int{576, 1420, 1504, 9000} {
		t.Run(strconv.Itoa(mtu), func(t *testing.T) {
			ns := newNodes(t, dataplane.Config{MTU: mtu, Workers: 2}, [2]func([][]byte){})
			for i, size := range []int{mtu, mtu - 1, 64} {
				for from := range ns {
					to := 1 - from
					pkt := packet(ip4[from], ip4[to], size, uint32(i))
					if i%2 == 1 {
						pkt = packet(ip6[from], ip6[to], size, uint32(i))
					}
					if err := ns[from].tun.Send(pkt); err != nil {
						t.Fatal(err)
					}
					select {
					case got := <-ns[to].recv:
						if !bytes.Equal(got, pkt) {
							t.Fatalf("%d-byte packet from node %d: got %d bytes, want it unchanged", size, from, len(got))
						}
					case <-time.After(5 * time.Second):
						t.Fatalf("%d-byte packet from node %d did not arrive: %+v", size, from, ns[to].dev.Stats())
					}
				}
			}
		})
	}
}

// TestDeviceSmallestPool runs two devices on the smallest pool, one unit per direction, with
// streams both ways at once over the in-memory network, whose writers wait for room at the other
// end: neither direction may starve the other of buffers. Every packet arrives, in order.
func TestDeviceSmallestPool(t *testing.T) {
	goroutineLeakCheck(t)
	const count = 2000
	// At MTU and PeerMTU 1488 the buffers are batch.BufferLen long (16 + 1488 + 16 + 16), so the
	// pool holds 3 batches of batch.BatchBytes: the two readers' and the control sends'.
	ns := newNodes(t, dataplane.Config{MTU: 1488, PeerMTU: 1488, Workers: 2, MaxMemory: 3 * batch.BatchBytes}, [2]func([][]byte){})
	var wg sync.WaitGroup
	for from := range ns {
		to := 1 - from
		wg.Go(func() {
			for i := range count {
				if err := ns[from].tun.Send(packet(ip4[from], ip4[to], 1420, uint32(i))); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	errs := make(chan error, 2)
	for to := range ns {
		from := 1 - to
		go func() {
			for i := range count {
				select {
				case got := <-ns[to].recv:
					if want := packet(ip4[from], ip4[to], 1420, uint32(i)); !bytes.Equal(got, want) {
						errs <- fmt.Errorf("node %d: packet %d is not the %d-th sent", to, i, i)
						return
					}
				case <-time.After(10 * time.Second):
					errs <- fmt.Errorf("node %d: packet %d of %d did not arrive: %+v", to, i, count, ns[to].dev.Stats())
					return
				}
			}
			errs <- nil
		}()
	}
	for range 2 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	// Both at once: a device whose sender waits for room at a stuck peer closes only when the peer
	// does. Closing also ends the Sends above if a stuck device stopped reading.
	for _, n := range ns {
		wg.Go(func() { n.dev.Close() })
	}
	wg.Wait()
}
