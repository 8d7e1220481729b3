// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package netnstests

import (
	"fmt"
	"testing"
	"time"
)

// TestE2EInterop pairs our tunnel with wireguard-go (tunnel_test.go has the basic case). Each
// implementation takes each role: only the initiator's configuration has an Endpoint, so the
// responder must learn the initiator's address from the handshake; loadgen then runs both ways
// over that session. A third case has our tunnel, as initiator, rekey after a second
// (-rekey-after-time; only the initiator of a session rekeys on its age, WireGuard section 6.2,
// and REKEY_TIMEOUT, 5 s, spaces its initiations) while traffic flows for 6 s: wireguard-go must
// follow to the new session without losing a packet. Every
// datagram must arrive once and intact, and our side must count no drop. The last case is
// TestE2EFaults with wireguard-go sending to our tunnel through the impaired relay.
func TestE2EInterop(t *testing.T) {
	checkLeaks(t)
	type tc struct {
		initiator, responder impl
		rekey                bool
	}
	cases := []tc{
		{ours, wireguardGo, false},
		{wireguardGo, ours, false},
		{ours, wireguardGo, true},
	}
	for _, c := range cases {
		name := fmt.Sprintf("%s initiates, %s responds", c.initiator.name, c.responder.name)
		if c.rekey {
			name += ", tunnel rekeys"
		}
		t.Run(name, func(t *testing.T) {
			cfg := topoConfig{A: c.initiator, B: c.responder, NoEndpointB: true}
			duration := "1s"
			if c.rekey {
				duration = "3s"
				cfg.ExtraA = []string{"-rekey-after-time", "1s"}
			}
			tp := newTopo(t, cfg)
			tp.start()
			loadRecv(t, tp.A)
			loadRecv(t, tp.B)
			t.Logf("first packet through after %v", reach(t, tp.A, tp.B, 10*time.Second))
			// Counted from here: the first probes waited for the handshake as no_key drops.
			beforeA, _ := tp.A.snapshot()
			beforeB, _ := tp.B.snapshot()
			wantClean(t, loadSend(t, tp.A, tp.B, "-rate", "3000", "-size", "64,1392", "-duration", duration))
			wantClean(t, loadSend(t, tp.B, tp.A, "-rate", "3000", "-size", "imix", "-duration", duration))
			for _, e := range []struct {
				*end
				before counters
			}{{tp.A, beforeA}, {tp.B, beforeB}} {
				after, ok := e.stop()
				if !ok {
					continue
				}
				got := after.sub(e.before)
				t.Logf("%v: %+v", e, got)
				wantNoDrops(t, e.end, got)
				if c.rekey && e.end == tp.A && got.HandshakesCompleted == 0 {
					t.Errorf("%v completed no handshake in 6 s of traffic with -rekey-after-time 1s", e)
				}
			}
		})
	}
	// Our tunnel receives loadgen's stream from wireguard-go through the impaired relay, so its
	// counters account for what wireguard-go's datagrams suffered.
	t.Run("faults, wireguard-go sends to tunnel", func(t *testing.T) { runFaults(t, wireguardGo, ours) })
}
