// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

// Package tuntest is an in-memory TUN device for tests and benchmarks of package dataplane: the test
// plays the operating system, sending packets into the device (which the data plane reads) and
// receiving what the data plane writes.
//
// The queue of sent packets is a fixed ring of packet slots, so a steady stream allocates nothing;
// Send blocks while the ring is full, which gives a benchmark back-pressure instead of loss.
//
// Packet builds the TCP and UDP packets that the tests of TUN writers (the Device's, package
// tunvnet's) classify and coalesce.
package tuntest

import (
	"os"
	"sync"

	"github.com/wirebatch/wirebatch/batch"
)

// TUN implements dataplane.TUN (and the packet methods of golang.zx2c4.com/wireguard/tun.Device).
type TUN struct {
	mu      sync.Mutex
	nonFull sync.Cond // signalled when Read frees slots or on Close
	nonEmpt sync.Cond // signalled when Send fills slots or on Close
	slots   [][]byte  // ring of packet slots, each of cap mtu
	sizes   []int
	head, n int // first queued slot, number queued
	closed  bool

	deliver func(pkts [][]byte) // receives the device's writes
	wmu     sync.Mutex
	wviews  [][]byte
}

// BatchSize is what BatchSize reports: Read returns up to this many packets, whatever is queued.
const BatchSize = batch.MaxPackets

// New returns a device whose queue holds depth packets of at most mtu bytes. deliver is called
// synchronously from every Write with the written packets (headers and offset stripped); the slices
// are valid only during the call. deliver may be nil to discard writes.
func New(mtu, depth int, deliver func(pkts [][]byte)) *TUN {
	t := &TUN{slots: make([][]byte, depth), sizes: make([]int, depth), deliver: deliver}
	for i := range t.slots {
		t.slots[i] = make([]byte, mtu)
	}
	t.nonFull.L, t.nonEmpt.L = &t.mu, &t.mu
	return t
}

// Send queues packets for the device to read, in order, waiting while the queue is full. Packets
// longer than the MTU are truncated. It returns os.ErrClosed once the device is closed.
func (t *TUN) Send(pkts ...[]byte) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, p := range pkts {
		for t.n == len(t.slots) && !t.closed {
			t.nonFull.Wait()
		}
		if t.closed {
			return os.ErrClosed
		}
		i := (t.head + t.n) % len(t.slots)
		t.sizes[i] = copy(t.slots[i], p)
		t.n++
		t.nonEmpt.Signal()
	}
	return nil
}

// Read implements the device side: it copies up to len(bufs) queued packets to bufs[i][offset:],
// waiting until there is at least one.
func (t *TUN) Read(bufs [][]byte, sizes []int, offset int) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for t.n == 0 && !t.closed {
		t.nonEmpt.Wait()
	}
	if t.closed {
		return 0, os.ErrClosed
	}
	k := 0
	for k < len(bufs) && t.n > 0 {
		sizes[k] = copy(bufs[k][offset:], t.slots[t.head][:t.sizes[t.head]])
		t.head = (t.head + 1) % len(t.slots)
		t.n--
		k++
	}
	t.nonFull.Broadcast()
	return k, nil
}

// Write implements the device side: it hands bufs[i][offset:] to the deliver function.
func (t *TUN) Write(bufs [][]byte, offset int) (int, error) {
	t.wmu.Lock()
	defer t.wmu.Unlock()
	t.mu.Lock()
	closed := t.closed
	t.mu.Unlock()
	if closed {
		return 0, os.ErrClosed
	}
	t.wviews = t.wviews[:0]
	for _, b := range bufs {
		t.wviews = append(t.wviews, b[offset:])
	}
	if t.deliver != nil {
		t.deliver(t.wviews)
	}
	clear(t.wviews)
	return len(bufs), nil
}

// SetDeliver replaces the function that receives the device's writes.
func (t *TUN) SetDeliver(deliver func(pkts [][]byte)) {
	t.wmu.Lock()
	defer t.wmu.Unlock()
	t.deliver = deliver
}

// BatchSize implements the device side.
func (t *TUN) BatchSize() int { return BatchSize }

// Close wakes every waiter; later calls fail with os.ErrClosed.
func (t *TUN) Close() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.closed = true
	t.nonFull.Broadcast()
	t.nonEmpt.Broadcast()
	return nil
}
