// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package device

// The network side of a Device. The dataplane Device reads and writes one dataplane.UDP for its whole
// life; a WireGuard interface, though, closes and reopens its sockets at run time (listen_port,
// Down/Up). netBind is that one UDP: it forwards to the sockets of the moment, and its reader waits
// while there are none and carries on with the new ones after a rebind.
//
//	dataplane udpReader --ReadBuffers------> netBind --> sockets: nativeSockets (udp.Conn: recvmmsg, GRO)
//	pipeline, control  --WriteBatchReport-->         '-> or bindSockets (any conn.Bind: its ReceiveFuncs merged)
//
// netBind passes the data plane's fast paths (dataplane.UDPBufferReader, dataplane.UDPSendReporter)
// through to the sockets of the moment: udp.Conn has both, so datagrams land in the packet buffers
// with no copy and refused datagrams are counted on their peers; bindSockets copy from the bind's
// own buffers, which its ReceiveFuncs own.
//
// Ownership: mu guards the configuration (port, mark) and the switch from one sockets to the next;
// cur publishes the open sockets to the readers and writers without a lock (a writer that loads
// sockets just closed gets an error from them, as a datagram sent during a rebind is lost).

import (
	"errors"
	"net"
	"net/netip"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	"golang.zx2c4.com/wireguard/conn"

	"github.com/wirebatch/wirebatch/batch"
	"github.com/wirebatch/wirebatch/udp"
)

// sockets are the network sockets of one opening of a netBind. readBuffers and writeReport have
// the contracts of dataplane.UDPBufferReader and dataplane.UDPSendReporter; read and write those of
// dataplane.UDP's ReadBatch and WriteBatch.
type sockets interface {
	read(bufs [][]byte, sizes []int, srcs []netip.AddrPort) (int, error)
	readBuffers(bufs [][]byte, offset int, sizes []int, srcs []netip.AddrPort) (int, error)
	write(bufs [][]byte, dsts []netip.AddrPort) error
	writeReport(bufs [][]byte, dsts []netip.AddrPort, refused []bool) (int, error)
	setMark(mark uint32) error
	close() error
}

// errDown is what a send gets while the Device is down (its sockets closed).
var errDown = errors.New("device: down, no socket open")

// netBind is the dataplane.UDP of a Device (see the top of this file).
type netBind struct {
	bind   conn.Bind // parses endpoints; with native false, also the sockets
	native bool      // bind is a *conn.StdNetBind: open udp.Conn sockets instead
	eps    endpointCache
	batch  int
	// rxLen is the receive buffer length of bindSockets: longer than the data plane's own receive
	// buffers (the longest datagram it takes, rounded up to 64 bytes), so that a datagram too long
	// for them still fills them and is dropped as malformed, rather than arriving cut short.
	rxLen  int
	errorf func(format string, args ...any)

	// cur is Stored under mu and Loaded by the reader and the writers.
	cur atomic.Pointer[openSockets]

	mu     sync.Mutex
	port   uint16 // the configured port, then the one opened (wireguard-go reports the bound port)
	mark   uint32
	up     bool // between open and down: a port change reopens, even after a failed reopen
	closed bool
	// ready is closed, and replaced, when sockets open or the netBind closes: the reader waits
	// on it while cur is nil.
	ready chan struct{}
}

// openSockets boxes a sockets value for cur.
type openSockets struct{ s sockets }

// newNetBind returns a netBind over bind (nil: a conn.StdNetBind) with no sockets open: a Device
// starts down. maxDatagram is the longest datagram the data plane accepts.
func newNetBind(bind conn.Bind, maxDatagram int, errorf func(string, ...any)) *netBind {
	if bind == nil {
		bind = conn.NewStdNetBind()
	}
	n := &netBind{bind: bind, rxLen: maxDatagram + 128, errorf: errorf, ready: make(chan struct{})}
	_, n.native = bind.(*conn.StdNetBind)
	n.eps.bind = bind
	n.batch = batch.MaxPackets
	if !n.native {
		n.batch = min(max(bind.BatchSize(), 1), batch.MaxPackets)
	}
	return n
}

// BatchSize implements dataplane.UDP.
func (n *netBind) BatchSize() int { return n.batch }

// ReadBatch implements dataplane.UDP.
func (n *netBind) ReadBatch(bufs [][]byte, sizes []int, srcs []netip.AddrPort) (int, error) {
	return n.readFrom(func(s sockets) (int, error) { return s.read(bufs, sizes, srcs) })
}

// ReadBuffers implements dataplane.UDPBufferReader.
func (n *netBind) ReadBuffers(bufs [][]byte, offset int, sizes []int, srcs []netip.AddrPort) (int, error) {
	return n.readFrom(func(s sockets) (int, error) { return s.readBuffers(bufs, offset, sizes, srcs) })
}

// readFrom reads with read from the open sockets. While none are open it waits; when the sockets
// it reads from are closed by a rebind or Down it carries on with the next ones. It fails only once
// the netBind is closed, or with an error of the open sockets.
func (n *netBind) readFrom(read func(sockets) (int, error)) (int, error) {
	for {
		n.mu.Lock()
		closed, s, ready := n.closed, n.cur.Load(), n.ready
		n.mu.Unlock()
		if closed {
			return 0, net.ErrClosed
		}
		if s == nil {
			<-ready
			continue
		}
		k, err := read(s.s)
		if err == nil || k > 0 || n.cur.Load() == s {
			return k, err
		}
		// Closed under the reader by a rebind or Down: not an error of the Device.
	}
}

// WriteBatch implements dataplane.UDP.
func (n *netBind) WriteBatch(bufs [][]byte, dsts []netip.AddrPort) error {
	s := n.cur.Load()
	if s == nil {
		return errDown
	}
	return s.s.write(bufs, dsts)
}

// WriteBatchReport implements dataplane.UDPSendReporter.
func (n *netBind) WriteBatchReport(bufs [][]byte, dsts []netip.AddrPort, refused []bool) (int, error) {
	s := n.cur.Load()
	if s == nil {
		for i := range bufs {
			refused[i] = true
		}
		return len(bufs), errDown
	}
	return s.s.writeReport(bufs, dsts, refused)
}

// Close implements dataplane.UDP: it closes the sockets for good.
func (n *netBind) Close() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return nil
	}
	n.closed = true
	err := n.closeLocked()
	close(n.ready)
	return err
}

// open opens the sockets on the configured port with the configured mark, for a Device going up.
// On failure no sockets are open and the port reads 0, as wireguard-go reports it.
func (n *netBind) open() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	err := n.openLocked()
	n.up = err == nil
	return err
}

func (n *netBind) openLocked() error {
	if n.closed {
		return net.ErrClosed
	}
	if err := n.closeLocked(); err != nil {
		n.errorf("closing the sockets: %v", err)
	}
	var s sockets
	var port uint16
	var err error
	if n.native {
		s, port, err = openNative(n.port)
	} else {
		s, port, err = openBind(n.bind, n.port, n.batch, n.rxLen, &n.eps, n.errorf)
	}
	if err != nil {
		n.port = 0
		return err
	}
	if n.mark != 0 {
		if err := s.setMark(n.mark); err != nil {
			s.close()
			n.port = 0
			return err
		}
	}
	n.port = port
	n.cur.Store(&openSockets{s})
	close(n.ready)
	n.ready = make(chan struct{})
	return nil
}

// down closes the sockets, if open.
func (n *netBind) down() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.up = false
	return n.closeLocked()
}

func (n *netBind) closeLocked() error {
	if s := n.cur.Swap(nil); s != nil {
		return s.s.close()
	}
	return nil
}

// setPort sets the listen port, reopening the sockets on it if they are open.
func (n *netBind) setPort(port uint16) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.port = port
	if !n.up {
		return nil
	}
	return n.openLocked()
}

// setMark sets the fwmark of the open sockets and of those opened later.
func (n *netBind) setMark(mark uint32) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if mark == n.mark {
		return nil
	}
	n.mark = mark
	if s := n.cur.Load(); s != nil {
		return s.s.setMark(mark)
	}
	return nil
}

// config returns the listen port and the mark.
func (n *netBind) config() (port uint16, mark uint32) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.port, n.mark
}

// parseEndpoint parses a UAPI endpoint as the bind does (so that the same strings are accepted
// and rejected as with wireguard-go) and returns its address.
func (n *netBind) parseEndpoint(s string) (netip.AddrPort, error) {
	ep, err := n.bind.ParseEndpoint(s)
	if err != nil {
		return netip.AddrPort{}, err
	}
	a, ok := n.eps.addrOf(ep)
	if !ok {
		return netip.AddrPort{}, errors.New("the bind's endpoint is not an address and port")
	}
	return a, nil
}

// nativeSockets are our batched socket, for a Device whose bind is the standard one.
type nativeSockets struct{ c *udp.Conn }

// openNative opens a dual-stack socket on port, or an IPv4 one where IPv6 is unavailable.
func openNative(port uint16) (sockets, uint16, error) {
	c, err := udp.Listen(netip.AddrPortFrom(netip.IPv6Unspecified(), port))
	if err != nil {
		var err4 error
		if c, err4 = udp.Listen(netip.AddrPortFrom(netip.IPv4Unspecified(), port)); err4 != nil {
			return nil, 0, errors.Join(err, err4)
		}
	}
	return nativeSockets{c}, c.LocalAddr().Port(), nil
}

func (s nativeSockets) read(bufs [][]byte, sizes []int, srcs []netip.AddrPort) (int, error) {
	return s.c.ReadBatch(bufs, sizes, srcs)
}

func (s nativeSockets) readBuffers(bufs [][]byte, offset int, sizes []int, srcs []netip.AddrPort) (int, error) {
	return s.c.ReadBuffers(bufs, offset, sizes, srcs)
}

func (s nativeSockets) write(bufs [][]byte, dsts []netip.AddrPort) error {
	return s.c.WriteBatch(bufs, dsts)
}

func (s nativeSockets) writeReport(bufs [][]byte, dsts []netip.AddrPort, refused []bool) (int, error) {
	return s.c.WriteBatchReport(bufs, dsts, refused)
}

func (s nativeSockets) setMark(mark uint32) error { return s.c.SetMark(mark) }
func (s nativeSockets) close() error              { return s.c.Close() }

// bindSockets are an opened conn.Bind. Each of its ReceiveFuncs runs on a goroutine of its own
// into a batch of its own buffers and hands the batch to the reader, which copies the datagrams
// into the data plane's buffers and hands the batch back: the ReceiveFuncs block independently
// (one per address family, typically), so they cannot share the reader's buffers.
type bindSockets struct {
	bind  conn.Bind
	eps   *endpointCache
	batch int
	rx    chan *rxBatch
	done  chan struct{}
	wg    sync.WaitGroup

	// The batch being handed over and the next datagram of it; the reader's only.
	pending *rxBatch
	next    int
}

// rxBatch is one ReceiveFunc's buffers and what its last call returned.
type rxBatch struct {
	bufs  [][]byte
	sizes []int
	eps   []conn.Endpoint
	n     int
	back  chan struct{} // one token: the reader has taken every datagram
}

// A ReceiveFunc that fails receiveRetries times in a row, receiveRetryDelay apart, is given up (as
// wireguard-go does): its errors are not transient then, and retrying at once would spin.
const (
	receiveRetries    = 10
	receiveRetryDelay = time.Second / 3
)

func openBind(b conn.Bind, port uint16, batch, bufLen int, eps *endpointCache, errorf func(string, ...any)) (sockets, uint16, error) {
	fns, actual, err := b.Open(port)
	if err != nil {
		return nil, 0, err
	}
	s := &bindSockets{bind: b, eps: eps, batch: batch, rx: make(chan *rxBatch, len(fns)), done: make(chan struct{})}
	s.wg.Add(len(fns))
	for _, fn := range fns {
		rb := &rxBatch{bufs: make([][]byte, batch), sizes: make([]int, batch), eps: make([]conn.Endpoint, batch), back: make(chan struct{}, 1)}
		for i := range rb.bufs {
			rb.bufs[i] = make([]byte, bufLen)
		}
		go s.receive(fn, rb, errorf)
	}
	return s, actual, nil
}

// receive runs fn until the sockets close, handing each batch it fills to the reader.
func (s *bindSockets) receive(fn conn.ReceiveFunc, rb *rxBatch, errorf func(string, ...any)) {
	defer s.wg.Done()
	failures := 0
	for {
		n, err := fn(rb.bufs, rb.sizes, rb.eps)
		switch {
		case errors.Is(err, net.ErrClosed):
			select {
			case <-s.done:
			default:
				errorf("A receive function of the bind stopped: %v", err)
			}
			return
		case err != nil && n <= 0:
			if failures++; failures > receiveRetries {
				errorf("Failed to receive, %d times in a row; giving up: %v", failures, err)
				return
			}
			select {
			case <-time.After(receiveRetryDelay):
			case <-s.done:
				return
			}
			continue
		}
		failures = 0
		rb.n = min(n, len(rb.bufs)) // a bind's count past its buffers is not to be trusted
		select {
		case s.rx <- rb:
		case <-s.done:
			return
		}
		select {
		case <-rb.back:
		case <-s.done:
			return
		}
	}
}

func (s *bindSockets) read(bufs [][]byte, sizes []int, srcs []netip.AddrPort) (int, error) {
	return s.readBuffers(bufs, 0, sizes, srcs)
}

// readBuffers copies the datagrams into bufs[k][offset:] in order; it never permutes bufs.
func (s *bindSockets) readBuffers(bufs [][]byte, offset int, sizes []int, srcs []netip.AddrPort) (int, error) {
	if s.pending == nil {
		select {
		case s.pending = <-s.rx:
			s.next = 0
		case <-s.done:
			return 0, net.ErrClosed
		}
	}
	rb := s.pending
	k := 0
	for ; s.next < rb.n && k < len(bufs); s.next++ {
		i := s.next
		if rb.sizes[i] <= 0 {
			continue // conn.ReceiveFunc: entries of size zero are to be ignored
		}
		src, ok := s.eps.addrOf(rb.eps[i])
		if !ok {
			continue // not an address the data plane can answer to; nothing to count it on
		}
		// A datagram longer than bufs[k] fills it, which the data plane drops as truncated.
		sizes[k] = copy(bufs[k][offset:], rb.bufs[i][:min(rb.sizes[i], len(rb.bufs[i]))])
		srcs[k] = src
		k++
	}
	if s.next >= rb.n {
		clear(rb.eps[:rb.n])
		s.pending = nil
		rb.back <- struct{}{}
	}
	return k, nil
}

func (s *bindSockets) write(bufs [][]byte, dsts []netip.AddrPort) error {
	_, err := s.writeReport(bufs, dsts, nil)
	return err
}

// writeReport sends each run of datagrams to one destination with one Send of at most batch
// datagrams. A Send that fails refuses its whole run: a conn.Bind does not say which datagrams of
// it went out. refused may be nil.
func (s *bindSockets) writeReport(bufs [][]byte, dsts []netip.AddrPort, refused []bool) (int, error) {
	var first error
	nrefused := 0
	for i := 0; i < len(bufs); {
		j := i + 1
		for j < len(bufs) && j-i < s.batch && dsts[j] == dsts[i] {
			j++
		}
		ep, err := s.eps.endpointOf(dsts[i])
		if err == nil {
			err = s.bind.Send(bufs[i:j], ep)
		}
		if err != nil {
			if first == nil {
				first = err
			}
			nrefused += j - i
		}
		if refused != nil {
			for k := i; k < j; k++ {
				refused[k] = err != nil
			}
		}
		i = j
	}
	return nrefused, first
}

func (s *bindSockets) setMark(mark uint32) error { return s.bind.SetMark(mark) }

// close closes the bind and waits for the receive goroutines, so that the bind may be opened again.
func (s *bindSockets) close() error {
	close(s.done)
	err := s.bind.Close()
	s.wg.Wait()
	return err
}

// maxCachedEndpoints bounds each map of an endpointCache; past it the map starts over, so a flood of
// sources costs a re-parse, never unbounded memory.
const maxCachedEndpoints = 4096

// endpointCache maps a bind's conn.Endpoints to the addresses the data plane names peers by, and
// back, so that the steady state neither parses nor allocates: an endpoint seen or parsed once is
// found by address for sending, and a comparable endpoint by value on receipt.
type endpointCache struct {
	bind   conn.Bind
	mu     sync.RWMutex
	byAddr map[netip.AddrPort]conn.Endpoint
	byEP   map[conn.Endpoint]netip.AddrPort
}

// addrPort is implemented by endpoints that hold their address as a netip.AddrPort (the standard
// bind's, through an embedded AddrPort): read without formatting and parsing a string.
type addrPort interface {
	Addr() netip.Addr
	Port() uint16
}

// addrOf returns the address of ep; ok is false if ep has none (its DstToString is not an
// address and port).
func (c *endpointCache) addrOf(ep conn.Endpoint) (a netip.AddrPort, ok bool) {
	if ep == nil {
		return a, false
	}
	if ap, isAP := ep.(addrPort); isAP {
		a = netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
		c.learn(a, ep, false)
		return a, true
	}
	// An interface value is a map key only if its dynamic type is comparable.
	keyed := reflect.TypeOf(ep).Comparable()
	if keyed {
		c.mu.RLock()
		a, ok = c.byEP[ep]
		c.mu.RUnlock()
		if ok {
			return a, true
		}
	}
	a, err := netip.ParseAddrPort(ep.DstToString())
	if err != nil {
		return a, false
	}
	a = netip.AddrPortFrom(a.Addr().Unmap(), a.Port())
	c.learn(a, ep, keyed)
	return a, true
}

// learn records ep as the endpoint of a, unless a has one already, and a as the address of ep
// when byValue.
func (c *endpointCache) learn(a netip.AddrPort, ep conn.Endpoint, byValue bool) {
	c.mu.RLock()
	_, known := c.byAddr[a]
	c.mu.RUnlock()
	if known && !byValue {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byAddr == nil || len(c.byAddr) >= maxCachedEndpoints {
		c.byAddr = make(map[netip.AddrPort]conn.Endpoint)
	}
	if _, ok := c.byAddr[a]; !ok {
		c.byAddr[a] = ep
	}
	if byValue {
		if c.byEP == nil || len(c.byEP) >= maxCachedEndpoints {
			c.byEP = make(map[conn.Endpoint]netip.AddrPort)
		}
		c.byEP[ep] = a
	}
}

// endpointOf returns the bind's endpoint for a, parsing it on first use.
func (c *endpointCache) endpointOf(a netip.AddrPort) (conn.Endpoint, error) {
	c.mu.RLock()
	ep, ok := c.byAddr[a]
	c.mu.RUnlock()
	if ok {
		return ep, nil
	}
	ep, err := c.bind.ParseEndpoint(a.String())
	if err != nil {
		return nil, err
	}
	c.learn(a, ep, false)
	return ep, nil
}
