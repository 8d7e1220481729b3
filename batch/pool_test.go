// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package batch

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wirebatch/wirebatch/kernels"
	"github.com/wirebatch/wirebatch/protocol"
)

func newTestPool(t testing.TB, batches int) *Pool {
	t.Helper()
	p, err := NewPool(PoolConfig{MaxBytes: batches * BatchBytes, Batches: batches})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestPoolSizing(t *testing.T) {
	p, err := NewPool(PoolConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := p.Batches(), DefaultMaxBytes/BatchBytes; got != want || got*BatchBytes > DefaultMaxBytes {
		t.Errorf("default pool: %d batches of %d bytes, want %d within %d bytes", got, BatchBytes, want, DefaultMaxBytes)
	}
	if p.Free() != p.Batches() {
		t.Errorf("new pool: Free() = %d, want %d", p.Free(), p.Batches())
	}
	for _, cfg := range []PoolConfig{
		{MaxBytes: BatchBytes - 1},
		{MaxBytes: 3 * BatchBytes, Batches: 4},
		{Batches: DefaultMaxBytes/BatchBytes + 1},
		{MaxBytes: -1},
		{Batches: -1},
		{BufferLen: -64},
		{BufferLen: BufferLen + 32},
		{BufferLen: MaxBufferLen + 64},
	} {
		if _, err := NewPool(cfg); err == nil || !strings.HasPrefix(err.Error(), "batch: ") {
			t.Errorf("NewPool(%+v): error %v, want a batch: error", cfg, err)
		}
	}
	if p := newTestPool(t, 3); p.Batches() != 3 {
		t.Errorf("Batches() = %d, want 3", p.Batches())
	}
}

// TestPoolBufferLen: a pool of buffers for a 9000-byte MTU counts its
// larger batches against MaxBytes, and hands out batches whose every buffer
// has that length and holds a sealed packet of that MTU.
func TestPoolBufferLen(t *testing.T) {
	const mtu = 9000
	bufferLen := (Headroom + mtu + protocol.PaddingMultiple + kernels.TagSize + 63) &^ 63
	// Room for two jumbo batches, and for a third of the default size that
	// a pool counting BatchBytes would wrongly allocate.
	p, err := NewPool(PoolConfig{BufferLen: bufferLen, MaxBytes: 2*BatchBytesFor(bufferLen) + BatchBytes})
	if err != nil {
		t.Fatal(err)
	}
	if p.Batches() != 2 {
		t.Fatalf("Batches() = %d, want 2", p.Batches())
	}
	b := p.TryGet()
	checkBuffers(t, b, bufferLen)
	if Headroom-protocol.TransportHeaderSize+sealedLen(mtu) > bufferLen {
		t.Fatalf("a sealed %d-byte packet does not fit a %d-byte buffer", mtu, bufferLen)
	}
	p.Put(b)
}

func TestPoolTryGetFailsFast(t *testing.T) {
	p := newTestPool(t, 3)
	got := make(map[*Batch]bool)
	for range 3 {
		b := p.TryGet()
		if b == nil || got[b] {
			t.Fatalf("TryGet returned %p, held %v", b, got)
		}
		got[b] = true
	}
	if b := p.TryGet(); b != nil {
		t.Fatal("TryGet on an exhausted pool returned a batch")
	}
	for b := range got {
		p.Put(b)
		break
	}
	if b := p.TryGet(); b == nil || !got[b] {
		t.Fatalf("TryGet after Put: %p, not a batch of the pool", b)
	}
}

// TestPoolLastPutFirstOut: Get and TryGet hand out the batch Put last (the one most likely still in
// the caches), then the one before it.
func TestPoolLastPutFirstOut(t *testing.T) {
	p := newTestPool(t, 4)
	var held [4]*Batch
	for i := range held {
		held[i] = p.TryGet()
	}
	for _, i := range []int{2, 0, 3} {
		p.Put(held[i])
	}
	if b := p.TryGet(); b != held[3] {
		t.Fatalf("TryGet returned batch %p, want the one Put last (%p)", b, held[3])
	}
	if b, err := p.Get(context.Background()); err != nil || b != held[0] {
		t.Fatalf("Get returned batch %p (%v), want the one Put before it (%p)", b, err, held[0])
	}
	p.Put(held[1])
	for _, want := range []*Batch{held[1], held[2]} {
		if b := p.TryGet(); b != want {
			t.Fatalf("TryGet returned batch %p, want %p", b, want)
		}
	}
}

func TestPoolGetWaitsForPut(t *testing.T) {
	p := newTestPool(t, 1)
	held := p.TryGet()
	gotc := make(chan *Batch)
	go func() {
		b, err := p.Get(context.Background())
		if err != nil {
			t.Error(err)
		}
		gotc <- b
	}()
	select {
	case <-gotc:
		t.Fatal("Get returned while every batch was out")
	case <-time.After(50 * time.Millisecond):
	}
	p.Put(held)
	select {
	case b := <-gotc:
		if b != held {
			t.Fatal("Get returned a different batch")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Put did not wake the waiting Get")
	}
}

func TestPoolGetHonoursContext(t *testing.T) {
	p := newTestPool(t, 1)
	p.TryGet()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if b, err := p.Get(ctx); b != nil || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Get on an exhausted pool: %p, %v; want nil, DeadlineExceeded", b, err)
	}
}

func expectPanic(t *testing.T, what, want string, f func()) {
	t.Helper()
	defer func() {
		t.Helper()
		r := recover()
		if s, ok := r.(string); !ok || !strings.HasPrefix(s, "batch: ") || !strings.Contains(s, want) {
			t.Errorf("%s: recovered %v, want a batch: panic about %q", what, r, want)
		}
	}()
	f()
}

func TestPoolMisusePanics(t *testing.T) {
	p := newTestPool(t, 2)
	other := newTestPool(t, 1)
	b := p.TryGet()
	p.Put(b)
	expectPanic(t, "double Put", "already in the pool", func() { p.Put(b) })
	if p.Free() != 2 {
		t.Fatalf("Free() = %d after a rejected double Put, want 2", p.Free())
	}
	expectPanic(t, "Put of a batch not from a pool", "not from this pool", func() { p.Put(newBatch(BufferLen)) })
	expectPanic(t, "Put into the wrong pool", "not from this pool", func() { p.Put(other.TryGet()) })
}

// TestPoolOwnership has many goroutines take and give back batches from a
// small pool. Each writes its id into the batch it holds without
// synchronization and checks it is still there before Put: two holders of
// one batch show up as a wrong id, or as a data race under -race.
func TestPoolOwnership(t *testing.T) {
	const (
		batches = 4
		workers = 8
		rounds  = 2000
	)
	p := newTestPool(t, batches)
	var out atomic.Int32
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for r := range rounds {
				var b *Batch
				if r%2 == 0 {
					b = p.TryGet()
					if b == nil {
						continue
					}
				} else {
					var err error
					if b, err = p.Get(context.Background()); err != nil {
						t.Error(err)
						return
					}
				}
				if n := out.Add(1); n > batches {
					t.Errorf("%d batches out of a pool of %d", n, batches)
				}
				var buf [1][]byte
				b.Buffers(buf[:])
				buf[0][0] = byte(w)
				runtime.Gosched()
				if buf[0][0] != byte(w) {
					t.Errorf("worker %d's batch was changed by worker %d", w, buf[0][0])
				}
				out.Add(-1)
				p.Put(b)
			}
		})
	}
	wg.Wait()
	seen := make(map[*Batch]bool)
	for b := p.TryGet(); b != nil; b = p.TryGet() {
		seen[b] = true
	}
	if len(seen) != batches {
		t.Fatalf("%d distinct batches in the pool at the end, want %d", len(seen), batches)
	}
}

func TestPoolAllocatesNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	p := newTestPool(t, 2)
	ctx := context.Background()
	allocs := testing.AllocsPerRun(1000, func() {
		b := p.TryGet()
		p.Put(b)
		b, err := p.Get(ctx)
		if err != nil {
			t.Fatal(err)
		}
		p.Put(b)
	})
	if allocs != 0 {
		t.Errorf("%v allocations per get and put, want 0", allocs)
	}
}

// BenchmarkPool measures taking a batch and giving it back. The baseline is
// the obvious alternative free list, a buffered channel of batches, in the
// same run.
func BenchmarkPool(b *testing.B) {
	b.Run("chan-baseline", func(b *testing.B) {
		free := make(chan *Batch, 4)
		for range 4 {
			free <- newBatch(BufferLen)
		}
		b.ReportAllocs()
		for b.Loop() {
			bt := <-free
			free <- bt
		}
	})
	b.Run("TryGet+Put", func(b *testing.B) {
		p := newTestPool(b, 4)
		b.ReportAllocs()
		for b.Loop() {
			p.Put(p.TryGet())
		}
	})
	b.Run("Get+Put", func(b *testing.B) {
		p := newTestPool(b, 4)
		ctx := context.Background()
		b.ReportAllocs()
		for b.Loop() {
			bt, err := p.Get(ctx)
			if err != nil {
				b.Fatal(err)
			}
			p.Put(bt)
		}
	})
	b.Run("Get+Put/parallel", func(b *testing.B) {
		p := newTestPool(b, 64)
		ctx := context.Background()
		b.ReportAllocs()
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				bt, err := p.Get(ctx)
				if err != nil {
					b.Error(err)
					return
				}
				p.Put(bt)
			}
		})
	})
}
