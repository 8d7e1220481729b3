// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package dataplane

// Keypairs and their lifetime.
//
// A Keypair is one session of a peer (WireGuard paper, section 5.4.5): a send key, a receive key, the
// two session indices, a send counter and a receive window. It is created by InstallKeypair from the
// plain KeypairConfig a handshake produces, sits in one of its peer's three slots (current, previous,
// next) and in the PeerSet's index table, and is retired when a newer keypair pushes it out or its peer
// is removed.
//
// Reclamation is by reference counting. refs starts at 1, the reference the PeerSet holds while the
// keypair is installed. A stage that finds a keypair (through a peer slot or the index table) takes a
// reference for the duration of one batch with tryAcquire, which fails once refs has reached zero, and
// drops it with release when the batch's AEAD call and replay checks are done. Retiring unlinks the
// keypair from the slots and the index (so no new stage can find it) and then drops the PeerSet's
// reference. Whoever drops the last reference destroys the two kernels.Keys, so a key is wiped only
// after every batch that could use it has finished, and no stage ever uses a wiped key: a stage that
// loaded the pointer before the unlink either acquired before the count hit zero (and so delays the
// destruction) or fails to acquire and treats the keypair as absent.

import (
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wirebatch/wirebatch/kernels"
	"github.com/wirebatch/wirebatch/protocol"
)

// KeypairConfig is the plain result of a handshake, as the control plane hands it over.
type KeypairConfig struct {
	Suite       kernels.Suite // kernels.ChaCha20Poly1305 for WireGuard; any 12-byte-nonce suite works
	SendKey     []byte        // copied; the caller may wipe it afterwards
	ReceiveKey  []byte        // copied; the caller may wipe it afterwards
	LocalIndex  uint32        // our session index: peers put it in the messages they send us
	RemoteIndex uint32        // the peer's session index: we put it in the messages we send
	Initiator   bool          // we sent the handshake initiation (section 5.4.2)
	Created     time.Time     // when the handshake completed; the zero time means now
}

// Keypair is an installed session. Its exported methods are safe for concurrent use.
type Keypair struct {
	send, recv  *kernels.Key
	localIndex  uint32
	remoteIndex uint32
	initiator   bool
	created     time.Time
	peer        *Peer

	// sendCounter is the next counter to hand out. The encrypt stage reserves a run of counters for
	// a whole batch with one Add; Go's atomics are sequentially consistent, so concurrent workers
	// get disjoint runs, and no other memory is published through it.
	sendCounter atomic.Uint64

	// refs counts references: the PeerSet's while installed, plus one per batch in flight (see the
	// comment at the top of this file). The CompareAndSwap in tryAcquire and the Add in release
	// are the only writes; the decrement to zero happens after every acquirer's use of the keys
	// (each acquirer's uses are sequenced before its own decrement), so Destroy cannot race a use.
	refs atomic.Int32

	// replayMu guards replay. Decrypt workers that share the keypair take it once per run of
	// consecutive packets of the batch that belong to this keypair, after kernels.Open, so the
	// critical section is a few bit operations per packet and never covers crypto.
	replayMu sync.Mutex
	replay   ReplayFilter
}

func newKeypair(p *Peer, c KeypairConfig) (*Keypair, error) {
	if c.Suite.NonceSize() != 12 {
		return nil, errors.New("dataplane: suite " + c.Suite.String() + " does not take the 12-byte transport nonce")
	}
	send, err := kernels.NewKey(c.Suite, c.SendKey)
	if err != nil {
		return nil, err
	}
	recv, err := kernels.NewKey(c.Suite, c.ReceiveKey)
	if err != nil {
		send.Destroy()
		return nil, err
	}
	created := c.Created
	if created.IsZero() {
		created = time.Now()
	}
	kp := &Keypair{
		send: send, recv: recv,
		localIndex: c.LocalIndex, remoteIndex: c.RemoteIndex,
		initiator: c.Initiator, created: created, peer: p,
	}
	kp.refs.Store(1)
	return kp, nil
}

// Peer returns the peer the keypair belongs to.
func (kp *Keypair) Peer() *Peer { return kp.peer }

// LocalIndex returns the index peers address this session by.
func (kp *Keypair) LocalIndex() uint32 { return kp.localIndex }

// RemoteIndex returns the index this session's messages carry.
func (kp *Keypair) RemoteIndex() uint32 { return kp.remoteIndex }

// Initiator reports whether we initiated the handshake of this session.
func (kp *Keypair) Initiator() bool { return kp.initiator }

// Created returns when the session was established.
func (kp *Keypair) Created() time.Time { return kp.created }

// SendCounter returns the next counter the session will send with (the number of counters used).
func (kp *Keypair) SendCounter() uint64 { return kp.sendCounter.Load() }

// Suite returns the AEAD suite of the session.
func (kp *Keypair) Suite() kernels.Suite { return kp.send.Suite() }

// Destroyed reports whether the keypair has been retired and released by every user, so its keys
// are wiped.
func (kp *Keypair) Destroyed() bool { return kp.refs.Load() == 0 }

// tryAcquire takes a reference unless the keypair has already been released by everyone.
func (kp *Keypair) tryAcquire() bool {
	for {
		r := kp.refs.Load()
		if r <= 0 {
			return false
		}
		if kp.refs.CompareAndSwap(r, r+1) {
			return true
		}
	}
}

// release drops a reference; the last one wipes the keys.
func (kp *Keypair) release() {
	if kp.refs.Add(-1) == 0 {
		kp.send.Destroy()
		kp.recv.Destroy()
	}
}

// expired reports whether the keypair may no longer be used at time now (protocol.RejectAfterTime, section 6.2).
func (kp *Keypair) expired(now time.Time) bool {
	return now.Sub(kp.created) >= protocol.RejectAfterTime
}

// indexShards splits the index table so that installing a keypair copies only one small map.
// Local indices are random (section 5.4.2), so their low bits spread evenly.
const indexShards = 256

// indexTable maps local session indices to installed keypairs. Readers (the decrypt stage, once per
// distinct index per batch) are lock-free: each shard is an immutable map behind an atomic pointer;
// writers serialise on mu, copy the shard's map, change the copy and Store it. The Store pairs with
// the reader's Load, which then sees the complete map (the Go memory model's synchronized-before edge).
type indexTable struct {
	mu     sync.Mutex
	shards [indexShards]atomic.Pointer[map[uint32]*Keypair]
}

func (t *indexTable) lookup(idx uint32) *Keypair {
	m := t.shards[idx%indexShards].Load()
	if m == nil {
		return nil
	}
	return (*m)[idx]
}

// add inserts kp under its local index unless the index is taken.
func (t *indexTable) add(kp *Keypair) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := &t.shards[kp.localIndex%indexShards]
	old := s.Load()
	var m map[uint32]*Keypair
	if old != nil {
		if _, taken := (*old)[kp.localIndex]; taken {
			return false
		}
		m = make(map[uint32]*Keypair, len(*old)+1)
		for k, v := range *old {
			m[k] = v
		}
	} else {
		m = make(map[uint32]*Keypair, 1)
	}
	m[kp.localIndex] = kp
	s.Store(&m)
	return true
}

// remove deletes kp (and only kp) from the table.
func (t *indexTable) remove(kp *Keypair) {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := &t.shards[kp.localIndex%indexShards]
	old := s.Load()
	if old == nil || (*old)[kp.localIndex] != kp {
		return
	}
	m := make(map[uint32]*Keypair, len(*old))
	for k, v := range *old {
		if k != kp.localIndex {
			m[k] = v
		}
	}
	s.Store(&m)
}
