// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package ring

import (
	"context"
	"errors"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// queue is the API both rings share; the tests run against both.
type queue[T any] interface {
	TryEnqueue(vs []T) int
	TryDequeue(out []T) int
	Enqueue(vs []T) error
	Dequeue(out []T) (int, error)
	EnqueueContext(ctx context.Context, vs []T) error
	DequeueContext(ctx context.Context, out []T) (int, error)
	Close()
	Len() int
	Cap() int
}

type impl struct {
	name string
	new  func(capacity int) queue[int]
	// waiters exposes the parked-goroutine counts, so tests can wait until a
	// goroutine has really parked instead of sleeping and hoping.
	waiters func(q queue[int]) (consumers, producers int)
}

var impls = []impl{
	{
		name: "MPMC",
		new:  func(c int) queue[int] { return NewMPMC[int](c) },
		waiters: func(q queue[int]) (int, int) {
			r := q.(*MPMC[int])
			return int(r.notEmpty.waiters.Load()), int(r.notFull.waiters.Load())
		},
	},
	{
		name: "SPSC",
		new:  func(c int) queue[int] { return NewSPSC[int](c) },
		waiters: func(q queue[int]) (int, int) {
			r := q.(*SPSC[int])
			return int(r.notEmpty.waiters.Load()), int(r.notFull.waiters.Load())
		},
	},
}

// waitUntil polls cond until it holds, failing the test after 10 s.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestCapacityRoundsUp(t *testing.T) {
	for _, im := range impls {
		for _, tc := range []struct{ in, want int }{{1, 1}, {2, 2}, {3, 4}, {5, 8}, {128, 128}, {129, 256}} {
			if got := im.new(tc.in).Cap(); got != tc.want {
				t.Errorf("%s: capacity %d: Cap() = %d, want %d", im.name, tc.in, got, tc.want)
			}
		}
	}
}

func TestBadCapacityPanics(t *testing.T) {
	for _, c := range []int{0, -1} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("NewMPMC(%d) did not panic", c)
				}
			}()
			NewMPMC[int](c)
		}()
	}
}

func TestBurstsWrapAround(t *testing.T) {
	for _, im := range impls {
		t.Run(im.name, func(t *testing.T) {
			q := im.new(8)
			next, want := 0, 0
			out := make([]int, 8)
			for round := range 100 {
				// Enqueue 5 (or fewer when full), dequeue 3: indexes cross
				// the end of the slot array in every position.
				in := []int{next, next + 1, next + 2, next + 3, next + 4}
				room := 8 - q.Len()
				if n := q.TryEnqueue(in); n != min(5, room) {
					t.Fatalf("round %d: TryEnqueue added %d with %d free", round, n, room)
				}
				n := min(5, room)
				next += n
				m := q.TryDequeue(out[:3])
				for _, v := range out[:m] {
					if v != want {
						t.Fatalf("round %d: got %d, want %d", round, v, want)
					}
					want++
				}
				if q.Len() != next-want {
					t.Fatalf("round %d: Len() = %d, want %d", round, q.Len(), next-want)
				}
			}
			if next < 300 {
				t.Fatalf("only %d items went through", next)
			}
		})
	}
}

// TestDequeueClearsSlots checks that a ring keeps no reference to an item it
// handed out, so the garbage collector can free it.
func TestDequeueClearsSlots(t *testing.T) {
	m := NewMPMC[*int](4)
	s := NewSPSC[*int](4)
	in := []*int{new(int), new(int), new(int)}
	out := make([]*int, 4)
	for range 3 { // several rounds so that bursts wrap around
		m.TryEnqueue(in)
		s.TryEnqueue(in)
		m.TryDequeue(out)
		s.TryDequeue(out)
	}
	for i := range 4 {
		if m.slots[i] != nil || s.slots[i] != nil {
			t.Fatalf("slot %d still holds a pointer after every item was dequeued", i)
		}
	}
}

func TestCloseDrainsThenErrClosed(t *testing.T) {
	for _, im := range impls {
		t.Run(im.name, func(t *testing.T) {
			q := im.new(8)
			if err := q.Enqueue([]int{1, 2, 3}); err != nil {
				t.Fatal(err)
			}
			q.Close()
			q.Close() // idempotent
			if n := q.TryEnqueue([]int{4}); n != 0 {
				t.Errorf("TryEnqueue after Close added %d items", n)
			}
			if err := q.Enqueue([]int{4}); !errors.Is(err, ErrClosed) {
				t.Errorf("Enqueue after Close: %v, want ErrClosed", err)
			}
			out := make([]int, 2)
			var got []int
			for {
				n, err := q.Dequeue(out)
				if err != nil {
					if !errors.Is(err, ErrClosed) {
						t.Fatalf("Dequeue: %v", err)
					}
					break
				}
				got = append(got, out[:n]...)
			}
			if len(got) != 3 || got[0] != 1 || got[1] != 2 || got[2] != 3 {
				t.Fatalf("drained %v, want [1 2 3]", got)
			}
		})
	}
}

// blockedGoroutines is how many goroutines may wait on one side of a ring
// at once: any number for MPMC, one for SPSC.
func blockedGoroutines(im impl) int {
	if im.name == "SPSC" {
		return 1
	}
	return 3
}

func TestCloseWakesBlockedDequeue(t *testing.T) {
	for _, im := range impls {
		t.Run(im.name, func(t *testing.T) {
			q := im.new(4)
			n := blockedGoroutines(im)
			errc := make(chan error, n)
			for range n {
				go func() {
					_, err := q.Dequeue(make([]int, 1))
					errc <- err
				}()
			}
			waitUntil(t, "the consumers park", func() bool { c, _ := im.waiters(q); return c == n })
			q.Close()
			for range n {
				select {
				case err := <-errc:
					if !errors.Is(err, ErrClosed) {
						t.Fatalf("blocked Dequeue returned %v, want ErrClosed", err)
					}
				case <-time.After(10 * time.Second):
					t.Fatal("Close did not wake every blocked Dequeue")
				}
			}
		})
	}
}

func TestCloseWakesBlockedEnqueue(t *testing.T) {
	for _, im := range impls {
		t.Run(im.name, func(t *testing.T) {
			q := im.new(2)
			q.TryEnqueue([]int{1, 2})
			n := blockedGoroutines(im)
			errc := make(chan error, n)
			for range n {
				go func() { errc <- q.Enqueue([]int{3}) }()
			}
			waitUntil(t, "the producers park", func() bool { _, p := im.waiters(q); return p == n })
			q.Close()
			for range n {
				select {
				case err := <-errc:
					if !errors.Is(err, ErrClosed) {
						t.Fatalf("blocked Enqueue returned %v, want ErrClosed", err)
					}
				case <-time.After(10 * time.Second):
					t.Fatal("Close did not wake every blocked Enqueue")
				}
			}
			if q.Len() != 2 {
				t.Fatalf("Len() = %d after Close, want the 2 items enqueued before", q.Len())
			}
		})
	}
}

// TestOneBurstWakesEveryConsumer parks several consumers that each take one
// item, then enqueues one item each in a single burst. The producer rings
// the bell once; the consumers must wake one another (the chain wake-up) or
// some stay parked beside items meant for them.
func TestOneBurstWakesEveryConsumer(t *testing.T) {
	q := NewMPMC[int](8)
	const consumers = 3
	got := make(chan int, consumers)
	for range consumers {
		go func() {
			out := make([]int, 1)
			if _, err := q.Dequeue(out); err == nil {
				got <- out[0]
			}
		}()
	}
	waitUntil(t, "the consumers park", func() bool { return q.notEmpty.waiters.Load() == consumers })
	if n := q.TryEnqueue([]int{1, 2, 3}); n != consumers {
		t.Fatalf("TryEnqueue added %d", n)
	}
	sum := 0
	for range consumers {
		select {
		case v := <-got:
			sum += v
		case <-time.After(10 * time.Second):
			t.Fatal("a consumer stayed parked while an item waited for it")
		}
	}
	if sum != 6 {
		t.Fatalf("consumers got items summing to %d, want 6", sum)
	}
	q.Close()
}

// TestOneBurstWakesEveryProducer is the same for producers parked on a full
// ring and a consumer that frees room for all of them in one burst.
func TestOneBurstWakesEveryProducer(t *testing.T) {
	q := NewMPMC[int](4)
	q.TryEnqueue([]int{0, 0, 0, 0})
	const producers = 3
	done := make(chan error, producers)
	for range producers {
		go func() { done <- q.Enqueue([]int{1}) }()
	}
	waitUntil(t, "the producers park", func() bool { return q.notFull.waiters.Load() == producers })
	if n := q.TryDequeue(make([]int, producers)); n != producers {
		t.Fatalf("TryDequeue took %d", n)
	}
	for range producers {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("a producer stayed parked while there was room for it")
		}
	}
	if q.Len() != 4 {
		t.Fatalf("Len() = %d, want 4", q.Len())
	}
}

// TestPartialEnqueueThenClose checks that an Enqueue of more than fits puts
// in what fits before it blocks, and reports ErrClosed when closed.
func TestPartialEnqueueThenClose(t *testing.T) {
	for _, im := range impls {
		t.Run(im.name, func(t *testing.T) {
			q := im.new(2)
			errc := make(chan error)
			go func() { errc <- q.Enqueue([]int{1, 2, 3}) }()
			waitUntil(t, "the producer parks", func() bool { _, p := im.waiters(q); return p == 1 })
			q.Close()
			if err := <-errc; !errors.Is(err, ErrClosed) {
				t.Fatalf("Enqueue returned %v, want ErrClosed", err)
			}
			out := make([]int, 4)
			if n := q.TryDequeue(out); n != 2 || out[0] != 1 || out[1] != 2 {
				t.Fatalf("ring holds %v, want the prefix [1 2]", out[:n])
			}
		})
	}
}

func TestContextCancelsWaits(t *testing.T) {
	for _, im := range impls {
		t.Run(im.name, func(t *testing.T) {
			q := im.new(1)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
			defer cancel()
			if _, err := q.DequeueContext(ctx, make([]int, 1)); !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("DequeueContext on an empty ring: %v, want DeadlineExceeded", err)
			}
			q.TryEnqueue([]int{1})
			if err := q.EnqueueContext(ctx, []int{2}); !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("EnqueueContext on a full ring: %v, want DeadlineExceeded", err)
			}
		})
	}
}

// TestParkedConsumerWakes checks the hand-off from a parked consumer to a
// producer, many times, so that a lost wake-up would hang the test.
func TestParkedConsumerWakes(t *testing.T) {
	for _, im := range impls {
		t.Run(im.name, func(t *testing.T) {
			q := im.new(4)
			const rounds = 200
			done := make(chan error)
			go func() {
				out := make([]int, 1)
				for i := range rounds {
					if _, err := q.Dequeue(out); err != nil || out[0] != i {
						done <- errors.New("wrong item or error")
						return
					}
				}
				done <- nil
			}()
			for i := range rounds {
				if i%20 == 0 {
					// Let the consumer spin out and park before this item.
					waitUntil(t, "the consumer parks", func() bool { c, _ := im.waiters(q); return c == 1 })
				}
				if err := q.Enqueue([]int{i}); err != nil {
					t.Fatal(err)
				}
			}
			select {
			case err := <-done:
				if err != nil {
					t.Fatal(err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("consumer missed a wake-up")
			}
		})
	}
}

// cpuTime returns the CPU time (user + system) this process has used.
func cpuTime(t *testing.T) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestParkedConsumerIsIdle checks the promise that an idle pipeline burns no
// CPU: while consumers are parked on empty rings, the whole process must use
// under 1% of one core. A consumer that kept spinning would use ~100%.
func TestParkedConsumerIsIdle(t *testing.T) {
	for _, im := range impls {
		t.Run(im.name, func(t *testing.T) {
			q := im.new(4)
			got := make(chan int)
			go func() {
				out := make([]int, 1)
				if _, err := q.Dequeue(out); err == nil {
					got <- out[0]
				}
				close(got)
			}()
			waitUntil(t, "the consumer parks", func() bool { c, _ := im.waiters(q); return c == 1 })
			// The process CPU time also counts the runtime's own threads and
			// whatever else the test binary does; on a busy shared machine a
			// single window can catch a garbage collection or a timer burst.
			// Take the best of three windows: a spinning consumer fails all.
			const window = 300 * time.Millisecond
			best := time.Duration(1 << 62)
			for range 3 {
				before := cpuTime(t)
				time.Sleep(window)
				best = min(best, cpuTime(t)-before)
				if best < window/100 {
					break
				}
			}
			if best >= window/100 {
				t.Errorf("parked consumer: process used %v of CPU in %v, want < 1%% of a core", best, window)
			}
			if err := q.Enqueue([]int{42}); err != nil {
				t.Fatal(err)
			}
			select {
			case v := <-got:
				if v != 42 {
					t.Fatalf("consumer got %d, want 42", v)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("parked consumer was not woken")
			}
		})
	}
}

// transfer runs producers that each enqueue perProducer distinct items in
// random bursts and consumers that dequeue in random bursts until the ring
// is closed and drained. It checks that every item is delivered exactly once
// and that each consumer sees each producer's items in the order they were
// enqueued. Slot ownership is checked by the race detector: the rings touch
// slots with plain loads and stores, so two goroutines owning one slot at
// once without the rings' atomic edges between them is reported as a data
// race under -race.
func transfer(t *testing.T, q queue[int], producers, consumers, perProducer, maxBurst int) {
	seen := make([]atomic.Int32, producers*perProducer)
	var wg sync.WaitGroup
	for p := range producers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(p), 1))
			buf := make([]int, maxBurst)
			for i := 0; i < perProducer; {
				n := min(1+rng.IntN(maxBurst), perProducer-i)
				for k := range n {
					buf[k] = p*perProducer + i + k
				}
				if err := q.Enqueue(buf[:n]); err != nil {
					t.Errorf("Enqueue: %v", err)
					return
				}
				i += n
			}
		})
	}
	var consumersDone sync.WaitGroup
	for c := range consumers {
		consumersDone.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(c), 2))
			out := make([]int, maxBurst)
			last := make([]int, producers)
			for i := range last {
				last[i] = -1
			}
			for {
				n, err := q.Dequeue(out[:1+rng.IntN(maxBurst)])
				if err != nil {
					if !errors.Is(err, ErrClosed) {
						t.Errorf("Dequeue: %v", err)
					}
					return
				}
				for _, v := range out[:n] {
					seen[v].Add(1)
					p, i := v/perProducer, v%perProducer
					if i <= last[p] {
						t.Errorf("consumer %d got item %d of producer %d after item %d", c, i, p, last[p])
					}
					last[p] = i
				}
			}
		})
	}
	wg.Wait()
	q.Close()
	consumersDone.Wait()
	for v := range seen {
		if n := seen[v].Load(); n != 1 {
			t.Fatalf("item %d delivered %d times", v, n)
		}
	}
}

func TestMPMCExactlyOnce(t *testing.T) {
	for _, tc := range []struct{ producers, consumers, capacity, burst int }{
		{1, 1, 16, 8},
		{4, 4, 16, 8},
		{8, 2, 64, 32},
		{2, 8, 8, 16}, // bursts larger than the ring
		{6, 6, 1, 1},
	} {
		transfer(t, NewMPMC[int](tc.capacity), tc.producers, tc.consumers, 5000, tc.burst)
	}
}

func TestSPSCFIFO(t *testing.T) {
	for _, capacity := range []int{1, 8, 256} {
		transfer(t, NewSPSC[int](capacity), 1, 1, 50000, 64)
	}
}

// token circulates through a ring; owner records which worker holds it.
type token struct {
	owner  atomic.Int32
	visits int // written by the owner without synchronization: -race flags two owners
}

// TestMPMCOwnership is the ring ownership stress test of DPDK's
// test_ring_stress and Go's poolqueue test: a fixed set of tokens circulates
// through one ring between workers that are producers and consumers at once.
// Each worker stamps every token it dequeues with its id, checks no one else
// holds it, and clears the stamp before enqueueing it again. At the end every
// token must be back in the ring exactly once.
func TestMPMCOwnership(t *testing.T) {
	const (
		workers = 8
		tokens  = 48
		budget  = 200000 // token passes in total
	)
	// Room for every token: workers that hold tokens block only in Dequeue,
	// never all of them in Enqueue.
	q := NewMPMC[*token](64)
	pool := make([]token, tokens)
	go func() {
		// Feed the tokens in while the workers already run.
		for i := range pool {
			if err := q.Enqueue([]*token{&pool[i]}); err != nil {
				t.Error(err)
			}
		}
	}()
	var passes atomic.Int64
	var wg sync.WaitGroup
	for w := range workers {
		id := int32(w + 1)
		wg.Go(func() {
			buf := make([]*token, 1+w*3)
			for passes.Load() < budget {
				n, err := q.Dequeue(buf)
				if err != nil {
					t.Error(err)
					return
				}
				for _, tok := range buf[:n] {
					if !tok.owner.CompareAndSwap(0, id) {
						t.Errorf("worker %d dequeued a token owned by %d", id, tok.owner.Load())
					}
					tok.visits++
				}
				if n > 1 {
					runtime.Gosched() // hold the tokens a while
				}
				for _, tok := range buf[:n] {
					if !tok.owner.CompareAndSwap(id, 0) {
						t.Errorf("worker %d lost a token to %d", id, tok.owner.Load())
					}
				}
				if err := q.Enqueue(buf[:n]); err != nil {
					t.Error(err)
					return
				}
				passes.Add(int64(n))
			}
		})
	}
	wg.Wait()
	q.Close()
	out := make([]*token, tokens+1)
	n := q.TryDequeue(out)
	if n != tokens {
		t.Fatalf("%d tokens in the ring at the end, want %d", n, tokens)
	}
	found := make(map[*token]bool)
	visits := 0
	for _, tok := range out[:n] {
		if found[tok] {
			t.Fatal("a token is in the ring twice")
		}
		found[tok] = true
		visits += tok.visits
	}
	if int64(visits) != passes.Load() {
		t.Fatalf("tokens counted %d visits, workers %d passes", visits, passes.Load())
	}
}

func TestSteadyStateAllocatesNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	for _, im := range impls {
		q := im.new(256)
		in := make([]int, 32)
		out := make([]int, 32)
		allocs := testing.AllocsPerRun(1000, func() {
			q.TryEnqueue(in)
			q.TryDequeue(out)
			if err := q.Enqueue(in); err != nil {
				t.Fatal(err)
			}
			if _, err := q.Dequeue(out); err != nil {
				t.Fatal(err)
			}
		})
		if allocs != 0 {
			t.Errorf("%s: %v allocations per enqueue/dequeue, want 0", im.name, allocs)
		}
	}
}

// FuzzBursts drives both rings with a sequence of bursts and checks them
// against a slice. The first byte picks the capacity; each further byte is
// an operation: 0xff closes the ring, otherwise the top bit picks dequeue or
// enqueue and the low 7 bits the burst size.
func FuzzBursts(f *testing.F) {
	f.Add([]byte{3, 5, 0x83, 2, 0x81, 0x88})
	f.Add([]byte{0, 1, 1, 0x81, 0xff, 0x81, 0x81})
	f.Add([]byte{63, 127, 0x90, 40, 0xc0, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, ops []byte) {
		if len(ops) == 0 {
			return
		}
		capacity := 1 + int(ops[0]%64)
		for _, im := range impls {
			q := im.new(capacity)
			capacity := q.Cap()
			var model []int
			next := 0
			closed := false
			out := make([]int, 128)
			for i, op := range ops[1:] {
				switch {
				case op == 0xff:
					q.Close()
					closed = true
				case op&0x80 == 0:
					size := int(op)
					in := make([]int, size)
					for k := range in {
						in[k] = next + k
					}
					want := min(size, capacity-len(model))
					if closed {
						want = 0
					}
					if got := q.TryEnqueue(in); got != want {
						t.Fatalf("%s op %d: TryEnqueue(%d) = %d, want %d", im.name, i, size, got, want)
					}
					model = append(model, in[:want]...)
					next += want
				default:
					size := int(op & 0x7f)
					want := min(size, len(model))
					got := q.TryDequeue(out[:size])
					if got != want {
						t.Fatalf("%s op %d: TryDequeue(%d) = %d, want %d", im.name, i, size, got, want)
					}
					for k := range got {
						if out[k] != model[k] {
							t.Fatalf("%s op %d: item %d = %d, want %d", im.name, i, k, out[k], model[k])
						}
					}
					model = model[got:]
				}
				if q.Len() != len(model) {
					t.Fatalf("%s op %d: Len() = %d, want %d", im.name, i, q.Len(), len(model))
				}
			}
			if closed && len(model) == 0 {
				if _, err := q.Dequeue(out[:1]); !errors.Is(err, ErrClosed) {
					t.Fatalf("%s: Dequeue on a closed, drained ring: %v", im.name, err)
				}
			}
		}
	})
}

// TestMPMCPositionsWrap starts a ring with its 32-bit positions and its
// operation counts just below where they wrap, then moves items through it
// concurrently: the index arithmetic must not notice the wrap.
func TestMPMCPositionsWrap(t *testing.T) {
	q := NewMPMC[int](16)
	start := word(1<<32-40, countMask-5)
	for _, w := range []*atomic.Uint64{&q.prodHead, &q.prodTail, &q.consHead, &q.consTail} {
		w.Store(start)
	}
	transfer(t, q, 3, 3, 2000, 5)
	// 6000 items from 40 below the wrap end 5960 past it.
	if got := position(q.consTail.Load()); got != 6000-40 {
		t.Fatalf("consumer tail at %d after 6000 items", got)
	}
}
