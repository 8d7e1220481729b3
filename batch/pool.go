// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package batch

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
)

// DefaultMaxBytes is the memory ceiling of a pool whose PoolConfig leaves
// MaxBytes zero: 64 MiB, 287 batches of 128 buffers of BufferLen bytes on
// 64-bit platforms.
const DefaultMaxBytes = 64 << 20

// PoolConfig sizes a Pool.
type PoolConfig struct {
	// MaxBytes is the most memory the pool's batches may occupy, counted as
	// BatchBytesFor(BufferLen) per batch. Zero means DefaultMaxBytes.
	MaxBytes int
	// Batches is how many batches the pool allocates up front; it never
	// allocates more. Zero means as many as fit in MaxBytes.
	Batches int
	// BufferLen is the length of every packet buffer of the pool's batches:
	// Headroom, the largest IP packet the user of the pool reads or writes,
	// its padding and the tag, rounded up to a multiple of 64 (so that each
	// buffer starts on a cache line) and at most MaxBufferLen. Zero means
	// BufferLen, enough for a 1500-byte MTU; a larger MTU needs more.
	BufferLen int
}

// Pool is a fixed set of batches, all allocated by NewPool, that the data
// plane takes with Get or TryGet and gives back with Put. When every batch is
// out, Get waits (backpressure on the stage that reads packets) and TryGet
// fails at once; the caller chooses. Safe for concurrent use; allocates
// nothing after NewPool.
//
// The free batches wait on a stack: Get hands out the batch Put last, whose
// buffers the caches most likely still hold. A queue would hand out the batch
// that has been free longest, so that a data plane cycles through all its
// batches (a dataplane.Device: 13 of about 230 KB, 3 MB) and every one comes
// back cold; the stack cut the CPU time per Gbit of one TCP stream through
// bench-tunnel by 4-5% (two runs of 7 and 11 alternating rounds against the
// queue the pool had been, 0.261 -> 0.250 and 0.254 -> 0.241). A mutex guards
// the stack, which Get and Put touch once per batch, not per packet, and a
// buffered channel holding one token per free batch lets Get wait with a
// context.
type Pool struct {
	mu   sync.Mutex
	free []*Batch // the free batches, the one Put last at the end
	// tokens holds one token per batch in free, taken before a pop and given after a push; its
	// capacity is the number of batches the pool owns.
	tokens chan struct{}
}

// batchState lets Put catch a batch given back twice. puts counts the Puts
// of the batch; pop records the count in lent when it hands the batch out,
// and Put advances puts from lent to lent+1 with a compare-and-swap. A second
// Put of the same loan finds puts already past lent and fails. Taking a batch
// thus costs one plain atomic load, and giving it back one
// compare-and-swap.
type batchState struct {
	puts atomic.Uint64
	lent uint64 // written by the getter, which owns the batch until Put
}

// NewPool allocates the batches of a pool. It fails if cfg's BufferLen is
// not a multiple of 64 in (0, MaxBufferLen], if cfg asks for more batches
// than fit in MaxBytes or if not one batch fits.
func NewPool(cfg PoolConfig) (*Pool, error) {
	maxBytes := cfg.MaxBytes
	if maxBytes == 0 {
		maxBytes = DefaultMaxBytes
	}
	bufferLen := cfg.BufferLen
	if bufferLen == 0 {
		bufferLen = BufferLen
	}
	if bufferLen < 0 || bufferLen > MaxBufferLen || bufferLen%64 != 0 {
		return nil, fmt.Errorf("batch: BufferLen %d is not a multiple of 64 in (0, %d]", bufferLen, MaxBufferLen)
	}
	batchBytes := BatchBytesFor(bufferLen)
	fit := maxBytes / batchBytes
	batches := cfg.Batches
	switch {
	case maxBytes < 0 || batches < 0:
		return nil, errors.New("batch: negative pool size")
	case fit == 0:
		return nil, fmt.Errorf("batch: MaxBytes %d is less than one batch (%d bytes)", maxBytes, batchBytes)
	case batches > fit:
		return nil, fmt.Errorf("batch: %d batches of %d bytes exceed MaxBytes %d", batches, batchBytes, maxBytes)
	case batches == 0:
		batches = fit
	}
	p := &Pool{free: make([]*Batch, 0, batches), tokens: make(chan struct{}, batches)}
	for range batches {
		b := newBatch(bufferLen)
		b.pool = p
		p.free = append(p.free, b)
		p.tokens <- struct{}{}
	}
	return p, nil
}

// Batches returns the number of batches the pool owns.
func (p *Pool) Batches() int { return cap(p.tokens) }

// Free returns the number of batches in the pool now; a snapshot under
// concurrent use.
func (p *Pool) Free() int { return len(p.tokens) }

// TryGet returns an empty batch, or nil at once if every batch is out.
func (p *Pool) TryGet() *Batch {
	select {
	case <-p.tokens:
		return p.pop()
	default:
		return nil
	}
}

// Get returns an empty batch, waiting while every batch is out. It returns
// ctx.Err() if ctx is done first.
func (p *Pool) Get(ctx context.Context) (*Batch, error) {
	select {
	case <-p.tokens:
		return p.pop(), nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// pop takes the batch Put last off the stack, for a caller holding one of the
// tokens: there is one batch on the stack for every token out of the channel
// and in it.
func (p *Pool) pop() *Batch {
	p.mu.Lock()
	b := p.free[len(p.free)-1]
	p.free[len(p.free)-1] = nil
	p.free = p.free[:len(p.free)-1]
	p.mu.Unlock()
	// Load of puts; pairs with the compare-and-swap in the Put that gave
	// the batch back, which the mutex already orders before this (that Put
	// pushed the batch before unlocking).
	b.state.lent = b.state.puts.Load()
	return b
}

// Put gives a batch back to the pool it came from, emptied. The caller must
// not use b afterwards. Put does not wait but for the mutex. Put panics if b
// came from another pool, or if it is already back in the pool (a
// second Put). A stale Put after the batch has been taken again by someone
// else looks like a first Put and cannot be caught.
func (p *Pool) Put(b *Batch) {
	if b.pool != p {
		panic("batch: Put of a batch that is not from this pool")
	}
	// Compare-and-swap, so that of two racing Puts of one batch exactly one
	// wins and the other panics instead of pushing it twice.
	if !b.state.puts.CompareAndSwap(b.state.lent, b.state.lent+1) {
		panic("batch: Put of a batch that is already in the pool")
	}

	p.mu.Lock()
	p.free = append(p.free, b) // within capacity: at most batches are ever free
	p.mu.Unlock()
	p.tokens <- struct{}{} // never blocks: the channel has room for every batch
}
