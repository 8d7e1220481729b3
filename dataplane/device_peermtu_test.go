// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package dataplane_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/wirebatch/wirebatch/dataplane"
)

// TestDeviceMTUMismatch: a peer whose tunnel MTU (1500) is larger than ours (1420) sends packets of
// its full MTU, which arrive; with PeerMTU below the sender's MTU they are dropped as malformed,
// counted, never delivered cut.
func TestDeviceMTUMismatch(t *testing.T) {
	for _, c := range []struct {
		peerMTU int
		deliver bool
	}{{0, true}, {1500, true}, {1420, false}} {
		ns := newNodesConfigs(t, [2]dataplane.Config{{MTU: 1500, Workers: 2}, {MTU: 1420, PeerMTU: c.peerMTU, Workers: 2}}, [2]func([][]byte){})
		const count = 20
		for i := range count {
			if err := ns[0].tun.Send(packet(ip4[0], ip4[1], 1500, uint32(i))); err != nil {
				t.Fatal(err)
			}
		}
		if !c.deliver {
			waitFor(t, "the oversized datagrams to be dropped", func() bool {
				return ns[1].dev.Stats().Drops[dataplane.VerdictMalformed] == count
			})
			select {
			case p := <-ns[1].recv:
				t.Fatalf("PeerMTU %d: a %d-byte packet was delivered", c.peerMTU, len(p))
			case <-time.After(50 * time.Millisecond):
			}
			continue
		}
		for i := range count {
			select {
			case got := <-ns[1].recv:
				if want := packet(ip4[0], ip4[1], 1500, uint32(i)); !bytes.Equal(got, want) {
					t.Fatalf("PeerMTU %d: packet %d: %d bytes, want the 1500 sent", c.peerMTU, i, len(got))
				}
			case <-time.After(5 * time.Second):
				t.Fatalf("PeerMTU %d: %d of %d 1500-byte packets arrived (drops %v)", c.peerMTU, i, count, ns[1].dev.Stats().Drops)
			}
		}
	}
}
