// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package handshake

import (
	"math/rand/v2"
	"time"

	"github.com/wirebatch/wirebatch/protocol"
)

// Timers (WireGuard paper section 6). Each peer runs a small state machine of deadlines, all kept
// as plain times so that it is driven entirely by the injected clock: events (a packet sent or
// received, a handshake initiated or completed) arm and disarm deadlines; PeerState.Tick fires the
// due ones and returns what the data plane must do. Nothing here sleeps or starts goroutines; a zero
// time.Time is a disarmed deadline.

// Limits holds the protocol's time and message limits (paper section 6.1, "Preliminaries"). A zero
// field means its default; tests shorten them and inject a fake clock.
type Limits struct {
	RekeyAfterMessages  uint64        // 2^60: initiate a new handshake once a keypair sent this many
	RejectAfterMessages uint64        // 2^64 - 2^13 - 1: never send or accept a counter at or past this
	RekeyAfterTime      time.Duration // 120 s: the initiator rekeys when its keypair is this old
	RejectAfterTime     time.Duration // 180 s: keypairs older than this are unusable
	RekeyAttemptTime    time.Duration // 90 s: give up retrying an unanswered handshake after this
	RekeyTimeout        time.Duration // 5 s: retransmit an unanswered initiation after this
	KeepaliveTimeout    time.Duration // 10 s: send a keepalive when data came in and none went out

	// RekeyTimeoutJitter bounds the random delay added to handshake retransmissions so that peers do
	// not retry in lockstep (paper section 6.4: "REKEY_TIMEOUT + jitter"). Zero means the default
	// 1/3 s; set NoJitter for deterministic tests.
	RekeyTimeoutJitter time.Duration
	NoJitter           bool

	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// DefaultRekeyTimeoutJitter is the default bound of the random delay added to handshake
// retransmissions (paper section 6.4). The other defaults are the constants of package protocol.
const DefaultRekeyTimeoutJitter = time.Second / 3

// withDefaults returns c with every zero field set to its default.
func (c Limits) withDefaults() Limits {
	set := func(d *time.Duration, def time.Duration) {
		if *d == 0 {
			*d = def
		}
	}
	if c.RekeyAfterMessages == 0 {
		c.RekeyAfterMessages = protocol.RekeyAfterMessages
	}
	if c.RejectAfterMessages == 0 {
		c.RejectAfterMessages = protocol.RejectAfterMessages
	}
	set(&c.RekeyAfterTime, protocol.RekeyAfterTime)
	set(&c.RejectAfterTime, protocol.RejectAfterTime)
	set(&c.RekeyAttemptTime, protocol.RekeyAttemptTime)
	set(&c.RekeyTimeout, protocol.RekeyTimeout)
	set(&c.KeepaliveTimeout, protocol.KeepaliveTimeout)
	set(&c.RekeyTimeoutJitter, DefaultRekeyTimeoutJitter)
	if c.NoJitter {
		c.RekeyTimeoutJitter = 0
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

func (c *Limits) jitter() time.Duration {
	if c.RekeyTimeoutJitter <= 0 {
		return 0
	}
	return rand.N(c.RekeyTimeoutJitter)
}

// Action is what a timer asks the data plane to do; PeerState.Tick returns several at once as a bit set.
type Action uint8

const (
	// ActionSendInitiation: call Identity.CreateInitiation for the peer and send the message to its
	// endpoint (a retransmission after REKEY_TIMEOUT, or a new handshake because data went out and
	// nothing came back for KEEPALIVE_TIMEOUT + REKEY_TIMEOUT, paper section 6.4 and 6.5).
	ActionSendInitiation Action = 1 << iota
	// ActionSendKeepalive: send an empty transport message with the current keypair (passive
	// keepalive, paper section 6.5; persistent keepalive, wg(8)). Without a usable keypair,
	// initiate a handshake instead.
	ActionSendKeepalive
	// ActionGiveUp: a handshake went unanswered for REKEY_ATTEMPT_TIME; drop the packets queued for
	// the peer (paper section 6.4). Retransmissions stop until something new needs a handshake.
	ActionGiveUp
	// ActionZeroKeys: no new keypair for 3 × REJECT_AFTER_TIME; destroy every keypair and pending
	// state of the peer (paper section 6.3: old keys are erased).
	ActionZeroKeys
)

// timerState is a peer's timers; guarded by the peer's mutex. Every deadline is zero when disarmed.
type timerState struct {
	retransmit   time.Time // initiation unanswered: resend at REKEY_TIMEOUT + jitter
	newHandshake time.Time // data sent, nothing received: rekey at KEEPALIVE + REKEY_TIMEOUT + jitter
	keepalive    time.Time // data received, nothing sent: keepalive at KEEPALIVE_TIMEOUT
	persistent   time.Time // persistent keepalive, re-armed by every authenticated packet
	zeroKeys     time.Time // erase keys 3 × REJECT_AFTER_TIME after the last new session

	persistentInterval time.Duration

	// attemptStart is when the current series of initiations (the first plus its retransmissions)
	// began, for REKEY_ATTEMPT_TIME. retryDue is set while the retransmission timer's request is
	// outstanding, so that the initiation it asked for continues the series; any other initiation
	// (new data to send, a rekey) starts a new series, as in wireguard-go.
	attemptStart time.Time
	retryDue     bool

	lastHandshakeSent time.Time // initiation or response; initiations are at most one per REKEY_TIMEOUT
	lastHandshake     time.Time // last completed handshake (initiator: response consumed; responder: confirmed)

	// receiveRekeySent is set once the receive path asked for a handshake for the current session,
	// so that it asks at most once per session (paper section 6.2).
	receiveRekeySent bool
}

func (t *timerState) handshakeInitiated(cfg *Limits, now time.Time) {
	if !t.retryDue {
		t.attemptStart = now
	}
	t.retryDue = false
	t.lastHandshakeSent = now
	t.retransmit = now.Add(cfg.RekeyTimeout + cfg.jitter())
}

// handshakeComplete: our initiation was answered, or our response was confirmed by the first
// transport message under its keys. Retransmission stops.
func (t *timerState) handshakeComplete(now time.Time) {
	t.retransmit = time.Time{}
	t.retryDue = false
	t.lastHandshake = now
}

// sessionDerived: a new keypair exists; erasing keys is pushed back (paper section 6.3).
func (t *timerState) sessionDerived(cfg *Limits, now time.Time) {
	t.zeroKeys = now.Add(3 * cfg.RejectAfterTime)
	t.receiveRekeySent = false
}

// packetTraversal: any authenticated packet (handshake or transport) went either way, which is
// what a persistent keepalive keeps alive (wg(8) PersistentKeepalive).
func (t *timerState) packetTraversal(now time.Time) {
	if t.persistentInterval > 0 {
		t.persistent = now.Add(t.persistentInterval)
	}
}

// packetSent: any authenticated packet went out; it acknowledges what came in, so no passive
// keepalive is owed.
func (t *timerState) packetSent(now time.Time) {
	t.keepalive = time.Time{}
	t.packetTraversal(now)
}

// packetReceived: any authenticated packet came in; the peer is alive, so no rekey for silence.
func (t *timerState) packetReceived(now time.Time) {
	t.newHandshake = time.Time{}
	t.packetTraversal(now)
}

// dataSent: a transport message with payload went out; if no authenticated packet comes back
// within KEEPALIVE_TIMEOUT + REKEY_TIMEOUT, the session is presumed dead (paper section 6.5).
func (t *timerState) dataSent(cfg *Limits, now time.Time) {
	if t.newHandshake.IsZero() {
		t.newHandshake = now.Add(cfg.KeepaliveTimeout + cfg.RekeyTimeout + cfg.jitter())
	}
}

// dataReceived: a transport message with payload came in; if we send nothing within
// KEEPALIVE_TIMEOUT, a keepalive tells the peer its data arrived (paper section 6.5).
func (t *timerState) dataReceived(cfg *Limits, now time.Time) {
	if t.keepalive.IsZero() {
		t.keepalive = now.Add(cfg.KeepaliveTimeout)
	}
}

// due reports whether an armed deadline has passed, and disarms it if so.
func due(deadline *time.Time, now time.Time) bool {
	if deadline.IsZero() || now.Before(*deadline) {
		return false
	}
	*deadline = time.Time{}
	return true
}

// tick fires every due deadline.
func (t *timerState) tick(cfg *Limits, now time.Time) Action {
	var a Action
	if due(&t.retransmit, now) {
		if now.Sub(t.attemptStart) >= cfg.RekeyAttemptTime {
			a |= ActionGiveUp
			if t.zeroKeys.IsZero() {
				t.zeroKeys = now.Add(3 * cfg.RejectAfterTime)
			}
		} else {
			t.retryDue = true
			a |= ActionSendInitiation
		}
	}
	if due(&t.newHandshake, now) {
		a |= ActionSendInitiation // starts a new series unless a retransmission is due too
	}
	if due(&t.keepalive, now) {
		a |= ActionSendKeepalive
	}
	if due(&t.persistent, now) {
		a |= ActionSendKeepalive
	}
	if due(&t.zeroKeys, now) {
		a |= ActionZeroKeys
	}
	return a
}

// nextDeadline returns the earliest armed deadline; ok is false when none is armed.
func (t *timerState) nextDeadline() (next time.Time, ok bool) {
	for _, d := range [...]time.Time{t.retransmit, t.newHandshake, t.keepalive, t.persistent, t.zeroKeys} {
		if !d.IsZero() && (!ok || d.Before(next)) {
			next, ok = d, true
		}
	}
	return next, ok
}
