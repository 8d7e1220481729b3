// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package handshake

import (
	"crypto/rand"
	"encoding/binary"
	"sync"
)

// IndexKind says what a local index currently names.
type IndexKind uint8

const (
	// IndexHandshake names a handshake we initiated and which awaits its response.
	IndexHandshake IndexKind = 1 + iota
	// IndexKeypair names an installed keypair: transport messages arrive with it as receiver index.
	IndexKeypair
)

// IndexTable allocates the random 32-bit session indices of paper section 5.4.2 ("I_i"), unique
// within a device, and maps each back to its peer. A handshake's index becomes its keypair's local
// index when the handshake completes, so one index lives from initiation to keypair retirement.
//
// The data plane shares the Identity's table (Identity.Indices) to route transport messages by receiver
// index and must Release a keypair's index when it destroys the keypair. Safe for concurrent use.
type IndexTable struct {
	mu      sync.RWMutex
	entries map[uint32]indexEntry
}

type indexEntry struct {
	peer *PeerState
	kind IndexKind
}

func newIndexTable() *IndexTable {
	return &IndexTable{entries: make(map[uint32]indexEntry)}
}

// allocate returns a fresh random index for p. Randomness (rather than a counter) keeps indices from
// revealing how many sessions a device has had; retries are rare while the table is far from full.
func (t *IndexTable) allocate(p *PeerState, kind IndexKind) uint32 {
	var b [4]byte
	t.mu.Lock()
	defer t.mu.Unlock()
	for {
		rand.Read(b[:]) // never fails (crypto/rand, Go 1.24+)
		idx := binary.LittleEndian.Uint32(b[:])
		if _, taken := t.entries[idx]; !taken {
			t.entries[idx] = indexEntry{peer: p, kind: kind}
			return idx
		}
	}
}

// promote turns a handshake index into a keypair index once the handshake completed.
func (t *IndexTable) promote(idx uint32) {
	t.mu.Lock()
	if e, ok := t.entries[idx]; ok {
		e.kind = IndexKeypair
		t.entries[idx] = e
	}
	t.mu.Unlock()
}

// Lookup returns the peer and kind of a local index; ok is false for an index not in use.
func (t *IndexTable) Lookup(idx uint32) (p *PeerState, kind IndexKind, ok bool) {
	t.mu.RLock()
	e, ok := t.entries[idx]
	t.mu.RUnlock()
	return e.peer, e.kind, ok
}

// Release frees a local index. The data plane calls it with Keypair.LocalIndex when it retires the
// keypair; the handshake releases the indices of abandoned handshakes itself.
func (t *IndexTable) Release(idx uint32) {
	t.mu.Lock()
	delete(t.entries, idx)
	t.mu.Unlock()
}

// releasePeer frees every index of p, when p is removed from the device.
func (t *IndexTable) releasePeer(p *PeerState) {
	t.mu.Lock()
	for idx, e := range t.entries {
		if e.peer == p {
			delete(t.entries, idx)
		}
	}
	t.mu.Unlock()
}

// Len returns the number of indices in use.
func (t *IndexTable) Len() int {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return len(t.entries)
}
