// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package dataplane

import "github.com/wirebatch/wirebatch/protocol"

// Anti-replay window of RFC 6479 ("IPsec Anti-Replay Algorithm without Bit Shifting").
//
// The window is a ring of replayWords 64-bit words. Counter c owns bit c%64 of word (c/64)%replayWords.
// When a counter beyond the highest seen arrives, the words between the old and the new highest block
// are cleared (at most the whole ring) instead of shifting a bitmap (RFC 6479, section 2.3); the
// highest block's word is always the newest, so one word of the ring is partly "in the future" and
// the usable window reaches (replayWords-1)*64 = 8128 counters behind the highest one: a counter
// that far behind lies in the oldest block the ring still holds, one further may not. The kernel's
// counter_validate and wireguard-go's replay.Filter draw the line at the same counter.
//
// The WireGuard paper (section 5.4.6) requires the check to happen only after the message has been
// authenticated, so that forged counters cannot move the window; the decrypt stage calls Check after
// kernels.Open succeeds. Counters at or above protocol.RejectAfterMessages are refused here as well.

const (
	replayWords = 128
	// ReplayWindow is how far behind the highest counter seen a counter is still accepted.
	ReplayWindow = (replayWords - 1) * 64
)

// ReplayFilter is one keypair's receive window. It is not safe for concurrent use: the Keypair that
// owns one guards it with a mutex (see Keypair.replayMu).
type ReplayFilter struct {
	highest uint64 // highest counter accepted; meaningful once any has been
	words   [replayWords]uint64
}

// Reset empties the window.
func (f *ReplayFilter) Reset() { *f = ReplayFilter{} }

// Check reports whether counter is new and inside the window, and if so records it: a second Check
// of the same counter returns false.
func (f *ReplayFilter) Check(counter uint64) bool {
	if counter >= protocol.RejectAfterMessages {
		return false
	}
	block := counter / 64
	if counter > f.highest {
		// Clear the words of the blocks that enter the window: those after the old highest block up
		// to the new one. A jump of a whole ring or more clears everything (RFC 6479, section 2.3).
		cur := f.highest / 64
		n := min(block-cur, replayWords)
		for i := uint64(1); i <= n; i++ {
			f.words[(cur+i)%replayWords] = 0
		}
		f.highest = counter
	} else if f.highest-counter > ReplayWindow {
		return false // too old: its word may have been reused by a newer block
	}
	w := &f.words[block%replayWords]
	bit := uint64(1) << (counter % 64)
	if *w&bit != 0 {
		return false
	}
	*w |= bit
	return true
}
