// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package dataplane

import "sync"

// Staging. A packet routed to a peer that has no usable keypair (VerdictNoKey, VerdictKeyExpired)
// cannot be sent until a handshake completes. Dropping it would lose the first packets of every
// session (the SYN or DNS query that made the OS send in the first place), so a Device keeps the
// most recent MaxStaged of them per peer, as wireguard-go does, and sends them when the peer gets a
// keypair it may send with: InstallKeypair as initiator, or the confirmation of a responder's
// keypair (EventKeypairConfirmed). Staged packets may leave after newer packets that found the new
// keypair first. The control plane drops them with Device.DropStaged when it gives up.

// MaxStaged is the number of outbound packets a Device keeps per peer while it has no keypair.
const MaxStaged = 32

// waitQueue is a peer's queue of staged packets, waiting for a handshake: a ring of MaxStaged slots
// of slot bytes each, allocated when a packet is staged and freed when the queue empties (drain,
// drop), so that only peers with packets waiting for a handshake hold one. This memory is outside the Device's pool and MaxMemory:
// at most MaxStaged*MTU bytes (45 KiB at the default MTU) per peer that has packets waiting.
type waitQueue struct {
	mu      sync.Mutex
	buf     []byte
	slot    int
	size    [MaxStaged]int
	head, n int
}

// push copies pkt (at most slot bytes long, else it is not staged) into the queue, evicting the oldest
// packet when full. It reports whether pkt was staged and whether a packet was evicted.
func (s *waitQueue) push(pkt []byte, slot int) (staged, evicted bool) {
	if len(pkt) > slot {
		return false, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.buf == nil {
		s.buf = make([]byte, MaxStaged*slot)
		s.slot = slot
	}
	if s.n == MaxStaged {
		s.head = (s.head + 1) % MaxStaged
		s.n--
		evicted = true
	}
	i := (s.head + s.n) % MaxStaged
	s.size[i] = copy(s.buf[i*s.slot:(i+1)*s.slot], pkt)
	s.n++
	return true, evicted
}

// drain moves up to len(bufs) packets, oldest first, into bufs[k][offset:], setting sizes[k], and
// returns how many.
func (s *waitQueue) drain(bufs [][]byte, sizes []int, offset int) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := 0
	for ; k < len(bufs) && s.n > 0; k++ {
		sizes[k] = copy(bufs[k][offset:], s.buf[s.head*s.slot:][:s.size[s.head]])
		s.head = (s.head + 1) % MaxStaged
		s.n--
	}
	if s.n == 0 {
		s.free()
	}
	return k
}

// free wipes and releases the emptied ring, so that a peer's next wait allocates it again.
func (s *waitQueue) free() {
	clear(s.buf)
	s.buf, s.head = nil, 0
}

// drop empties the queue and reports how many packets it held.
func (s *waitQueue) drop() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.n
	s.n = 0
	s.free()
	return n
}
