// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

// Package udptest is an in-memory UDP network for tests and benchmarks of package dataplane: Conns
// bound to addresses of one Network exchange datagrams through bounded queues.
//
// Each Conn's receive queue is a fixed ring of datagram slots, so a steady stream allocates nothing.
// A writer waits while the destination's queue is full (back-pressure, unlike real UDP, so that
// benchmarks measure the data plane rather than loss); datagrams to an address nobody is bound to, or
// to a closed Conn, are dropped.
package udptest

import (
	"net/netip"
	"os"
	"sync"

	"github.com/wirebatch/wirebatch/batch"
)

// Network connects Conns by address.
type Network struct {
	mu    sync.RWMutex
	conns map[netip.AddrPort]*Conn
}

// NewNetwork returns an empty network.
func NewNetwork() *Network { return &Network{conns: map[netip.AddrPort]*Conn{}} }

// Listen binds a Conn to addr with a receive queue of depth datagrams of at most size bytes.
func (nw *Network) Listen(addr netip.AddrPort, depth, size int) *Conn {
	c := &Conn{net: nw, addr: addr, slots: make([][]byte, depth), sizes: make([]int, depth), srcs: make([]netip.AddrPort, depth)}
	for i := range c.slots {
		c.slots[i] = make([]byte, size)
	}
	c.nonFull.L, c.nonEmpty.L = &c.mu, &c.mu
	nw.mu.Lock()
	nw.conns[addr] = c
	nw.mu.Unlock()
	return c
}

// Conn implements dataplane.UDP.
type Conn struct {
	net  *Network
	addr netip.AddrPort

	mu       sync.Mutex
	nonFull  sync.Cond
	nonEmpty sync.Cond
	slots    [][]byte
	sizes    []int
	srcs     []netip.AddrPort
	head, n  int
	closed   bool
}

// BatchSize is what BatchSize reports.
const BatchSize = batch.MaxPackets

// LocalAddr returns the address the Conn is bound to.
func (c *Conn) LocalAddr() netip.AddrPort { return c.addr }

// BatchSize implements dataplane.UDP.
func (c *Conn) BatchSize() int { return BatchSize }

// ReadBatch implements dataplane.UDP: it waits for at least one datagram and copies out up to
// len(bufs).
func (c *Conn) ReadBatch(bufs [][]byte, sizes []int, srcs []netip.AddrPort) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for c.n == 0 && !c.closed {
		c.nonEmpty.Wait()
	}
	if c.closed {
		return 0, os.ErrClosed
	}
	k := 0
	for k < len(bufs) && c.n > 0 {
		sizes[k] = copy(bufs[k], c.slots[c.head][:c.sizes[c.head]])
		srcs[k] = c.srcs[c.head]
		c.head = (c.head + 1) % len(c.slots)
		c.n--
		k++
	}
	c.nonFull.Broadcast()
	return k, nil
}

// WriteBatch implements dataplane.UDP: it delivers bufs[i] to the Conn bound to dsts[i].
func (c *Conn) WriteBatch(bufs [][]byte, dsts []netip.AddrPort) error {
	c.mu.Lock()
	closed := c.closed
	c.mu.Unlock()
	if closed {
		return os.ErrClosed
	}
	var dst *Conn
	for i, b := range bufs {
		if dst == nil || dst.addr != dsts[i] {
			c.net.mu.RLock()
			dst = c.net.conns[dsts[i]]
			c.net.mu.RUnlock()
			if dst == nil {
				continue
			}
		}
		dst.deliver(b, c.addr)
	}
	return nil
}

// deliver queues one datagram, waiting for room unless the Conn is closed.
func (c *Conn) deliver(b []byte, src netip.AddrPort) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for c.n == len(c.slots) && !c.closed {
		c.nonFull.Wait()
	}
	if c.closed {
		return
	}
	i := (c.head + c.n) % len(c.slots)
	c.sizes[i] = copy(c.slots[i], b)
	c.srcs[i] = src
	c.n++
	c.nonEmpty.Signal()
}

// Close unbinds the Conn and wakes every waiter, including writers blocked on its full queue.
func (c *Conn) Close() error {
	c.net.mu.Lock()
	if c.net.conns[c.addr] == c {
		delete(c.net.conns, c.addr)
	}
	c.net.mu.Unlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	c.nonFull.Broadcast()
	c.nonEmpty.Broadcast()
	return nil
}
