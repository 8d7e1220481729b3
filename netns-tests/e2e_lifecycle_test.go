// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package netnstests

import (
	"testing"
	"time"
)

// TestE2ERestart kills one end with SIGKILL, as a crash would, and starts it again with the same
// configuration. The restarted end has no session; the survivor still has the old one.
//
//   - The restarted end sends first: having no session it initiates at once, so its first packets
//     get through within REKEY_TIMEOUT (5 s, WireGuard section 6.4), and the survivor's replies
//     use the new session.
//   - The survivor sends first: its packets name the dead session's receiver index, which the
//     restarted end drops (no_key). Hearing nothing back, the survivor starts a new handshake after
//     KEEPALIVE_TIMEOUT + REKEY_TIMEOUT (15 s, section 6.5, plus wireguard-go's up to 1/3 s of
//     jitter); we allow 20 s.
//
// Afterwards loadgen runs clean over the new session, and both ends exit 0.
func TestE2ERestart(t *testing.T) {
	checkLeaks(t)
	impl := underTest(t)
	tp := newTopo(t, topoConfig{A: impl, B: impl})
	tp.start()
	reach(t, tp.A, tp.B, 10*time.Second)

	tp.B.kill()
	tp.B.start()
	t.Logf("B restarted and sending first: through after %v", reach(t, tp.B, tp.A, 5*time.Second))
	reach(t, tp.A, tp.B, 2*time.Second)

	tp.B.kill()
	tp.B.start()
	t.Logf("B restarted, A sending first: through after %v", reach(t, tp.A, tp.B, 20*time.Second))
	if c, ok := tp.B.snapshot(); ok && (c.Dropped.NoKey == 0 || c.HandshakesCompleted == 0) {
		t.Errorf("restarted B: %+v; want A's packets of the old session counted as no_key, then a handshake", c)
	}
	loadRecv(t, tp.B)
	wantClean(t, loadSend(t, tp.A, tp.B, "-rate", "3000", "-size", "64,1392", "-duration", "1s"))
	tp.B.stop()
	if c, ok := tp.A.stop(); ok && c.HandshakesCompleted < 3 {
		t.Errorf("A completed %d handshakes, want at least 3 (start and two restarts of B)", c.HandshakesCompleted)
	}
}

// TestE2ERoaming moves A, as B sees it, to another port: the relay between them restarts sending
// to B from 10.201.2.1:51821 instead of :51820, as a NAT might rebind. B's configured Endpoint for
// A is the old address; once an authenticated packet from A arrives from the new one, B must send
// there (WireGuard section 2.2, roaming). Nothing listens on the old port any more, so B's packets
// reach A only if B switched.
func TestE2ERoaming(t *testing.T) {
	checkLeaks(t)
	impl := underTest(t)
	tp := newTopo(t, topoConfig{A: impl, B: impl, Relay: []string{}})
	tp.startRelay(false)
	tp.start()
	reach(t, tp.A, tp.B, 10*time.Second)
	reach(t, tp.B, tp.A, 2*time.Second)
	// Counted from here: the first probe waited for the handshake as a no_key drop.
	beforeA, _ := tp.A.snapshot()
	beforeB, _ := tp.B.snapshot()

	tp.stopRelay()
	tp.relayRightPort = listenPort + 1
	tp.startRelay(false)
	reach(t, tp.A, tp.B, 2*time.Second)
	t.Logf("B to A after A roamed: through after %v", reach(t, tp.B, tp.A, 2*time.Second))
	rc := tp.stopRelay()
	if rc.RightToLeft.Received == 0 || rc.RightToLeft.Dropped != 0 {
		t.Errorf("relay after the move: B->A %+v; want B's packets at the new port, forwarded", rc.RightToLeft)
	}
	for _, e := range []struct {
		*end
		before counters
	}{{tp.A, beforeA}, {tp.B, beforeB}} {
		if c, ok := e.stop(); ok {
			wantNoDrops(t, e.end, c.sub(e.before))
		}
	}
}
