package batch

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/wirebatch/wirebatch/ring"
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
// plane takes with Get or TryGet and gives back with Put. The free batches
// wait in a ring.MPMC, so getting and putting a batch are a few atomic
// operations and allocate nothing. When every batch is out, Get waits
// (backpressure on the stage that reads packets) and TryGet fails at once;
// the caller chooses. Safe for concurrent use.
type Pool struct {
	free    *ring.MPMC[*Batch]
	batches int
}

// batchState lets Put catch a batch given back twice. puts counts the Puts
// of the batch; take records the count in lent when it hands the batch out,
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
	// Room for twice the batches: in ring.MPMC a slot a Get emptied is
	// reusable only once every Get in flight has finished (its relaxed tail
	// sync), so a batch can briefly hold its old slot and, after Put, a new
	// one. See Put.
	p := &Pool{free: ring.NewMPMC[*Batch](2 * batches), batches: batches}
	for range batches {
		b := newBatch(bufferLen)
		b.pool = p
		if p.free.TryEnqueue([]*Batch{b}) != 1 {
			panic("batch: pool ring smaller than the pool")
		}
	}
	return p, nil
}

// Batches returns the number of batches the pool owns.
func (p *Pool) Batches() int { return p.batches }

// Free returns the number of batches in the pool now; a snapshot under
// concurrent use.
func (p *Pool) Free() int { return p.free.Len() }

// TryGet returns an empty batch, or nil at once if every batch is out.
func (p *Pool) TryGet() *Batch {
	var one [1]*Batch
	if p.free.TryDequeue(one[:]) == 0 {
		return nil
	}
	return p.take(one[0])
}

// Get returns an empty batch, waiting while every batch is out. It returns
// ctx.Err() if ctx is done first.
func (p *Pool) Get(ctx context.Context) (*Batch, error) {
	var one [1]*Batch
	if _, err := p.free.DequeueContext(ctx, one[:]); err != nil {
		return nil, err
	}
	return p.take(one[0]), nil
}

func (p *Pool) take(b *Batch) *Batch {
	// Load of puts; pairs with the compare-and-swap in the Put that gave
	// the batch back, which the ring's index edges already order before
	// this (the batch left the ring after that Put put it in).
	b.state.lent = b.state.puts.Load()
	return b
}

// Put gives a batch back to the pool it came from, emptied. The caller must
// not use b afterwards. Put does not block: at worst it waits the few
// nanoseconds until Gets in flight finish. Put panics if b came from another pool or from New,
// or if it is already back in the pool (a second Put). A stale Put after
// the batch has been taken again by someone else looks like a first Put and
// cannot be caught.
func (p *Pool) Put(b *Batch) {
	if b.pool != p {
		panic("batch: Put of a batch that is not from this pool")
	}
	// Compare-and-swap, so that of two racing Puts of one batch exactly one
	// wins and the other panics instead of putting it in the ring twice.
	if !b.state.puts.CompareAndSwap(b.state.lent, b.state.lent+1) {
		panic("batch: Put of a batch that is already in the pool")
	}
	b.Reset()
	one := [1]*Batch{b}
	if p.free.TryEnqueue(one[:]) == 1 {
		return
	}
	// The ring looks full only while slots emptied by Gets wait for the
	// Gets still in flight to finish, which takes nanoseconds; Enqueue
	// waits for that. The pool never closes its ring, so Enqueue cannot
	// return ErrClosed.
	_ = p.free.Enqueue(one[:])
}
