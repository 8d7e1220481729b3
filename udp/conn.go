// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package udp

// Conn: one socket, a batch of datagrams per system call (see batch_linux.go), with socket buffers
// sized for bursts.
//
// Sending uses UDP generic segmentation offload where the kernel has it: runs of at least
// minGSOSegments consecutive datagrams of a batch to the same destination, all of one size but the
// last, which may be shorter, go out as ONE message whose iovecs are the datagrams themselves (no
// copy); the kernel, or the NIC, cuts it back into datagrams. A full batch of 1420-byte packets to
// one peer is then three messages instead of 128; the rest of a run that one message could not
// take goes on in the next however short. If the kernel refuses (EIO: no checksum offload on the
// route) GSO is switched off for the socket.
//
// Receiving uses UDP generic receive offload where the kernel has it: the kernel hands over runs of
// datagrams of one flow as one message. ReadBatch reads such messages into groMessages large
// buffers and copies them apart into the caller's per-datagram buffers; ReadBuffers mostly has the
// kernel put the datagrams in the caller's buffers directly. Memory: groMessages x 64 KiB per
// socket, fixed.

import (
	"net"
	"net/netip"
	"sync"

	"github.com/wirebatch/wirebatch/internal/sysio"
)

// maxBatch is the most datagrams a Conn moves with one system call, and what BatchSize reports:
// a full batch of the data path's.
const maxBatch = sysio.MaxBatch

// socketBuffer is the receive and send buffer size Listen asks for: several full batches of
// full-size datagrams, so that a burst the reader has not taken yet is not dropped by the kernel.
const socketBuffer = 4 << 20

const (
	// minGSOSegments is the shortest run sent as one GSO message; shorter runs go out a datagram
	// per message (still one sendmmsg). GSO saves little on a few datagrams, and without it a
	// sender that is not loaded, whose batches are a burst of a few packets, puts every datagram
	// on the wire as a frame of its own, as other WireGuard implementations do: packet captures
	// on the path see one datagram per frame.
	minGSOSegments = 8

	// groMessages is how many coalesced messages one receive call takes with GRO on.
	groMessages = 32

	// A coalesced message holds at most maxGROSegments datagrams (the kernel's UDP_GRO_CNT_MAX)
	// and maxGROBytes bytes (a 64 KiB IPv4 packet).
	maxGROSegments = 64
	maxGROBytes    = 65535 - 8 - 20
)

// Conn is a UDP socket for a data plane: it reads and writes batches of datagrams, a buffer each,
// packing runs of them into GSO messages and cutting GRO messages apart inside. One goroutine may
// read while others write.
type Conn struct {
	conn  *net.UDPConn
	batch *batchIO
	v4    bool // an IPv4-only socket (else dual-stack IPv6: IPv4 peers are v4-mapped)

	rmsgs [maxBatch]Message // used only by the one reading goroutine
	rbufs [maxBatch][1][]byte

	// With GRO (used only by the reading goroutine): messages read but not yet handed over
	// completely are groMsgs[gi:gn], the first from byte goff on.
	gro     bool
	groMsgs []Message
	groBufs [][1][]byte
	gi, gn  int
	goff    int

	groCoalesced uint64 // messages that carried more than one datagram (tests look at it)

	// Scattered reads (ReadBuffers, used only by the reading goroutine): the segment size of the
	// last coalesced message, which the next read's iovecs expect (0 before the first), the
	// iovecs of the messages scattered, and where in the caller's buffers each one's start.
	groSlot   int
	groIov    [maxBatch + groMessages][]byte
	slotStart [groMessages]int
	// groWhole: every message of the last scattered read was coalesced (see ReadBuffers).
	groWhole   bool
	groInPlace uint64 // datagrams received in place (tests look at it)

	wmu   sync.Mutex // serialises writers over the fields below
	gso   bool       // send with UDP_SEGMENT
	wmsgs [maxBatch]Message
	wiov  [maxBatch][]byte // the datagrams of a chunk; each message's Buffers is a run of it
	wsrc  [maxBatch]int    // for each datagram of wiov, its index in the chunk (pack)
	nmsgs int

	gsoMessages uint64 // messages sent with more than one segment (tests look at it), under wmu
}

// Listen opens a Conn on laddr: an IPv4 address gives an IPv4 socket; an IPv6 one (such as
// [::]:51820) a dual-stack socket. Port 0 picks a free port (see LocalAddr). It asks for 4 MiB
// socket buffers each way (as root past the system's rmem_max and wmem_max), and turns on the
// offloads the kernel has.
func Listen(laddr netip.AddrPort) (*Conn, error) {
	// "udp6" would set IPV6_V6ONLY; "udp" with an IPv6 address leaves it off, so that the
	// wildcard [::] also sends to and receives from IPv4 peers (as v4-mapped addresses).
	network := "udp"
	v4 := laddr.Addr().Is4()
	if v4 {
		network = "udp4"
	}
	conn, err := net.ListenUDP(network, net.UDPAddrFromAddrPort(laddr))
	if err != nil {
		return nil, err
	}
	// Reads take at most max(maxBatch, groMessages) messages, scattered ones up to maxBatch
	// buffers and a large one per message; writes at most maxBatch datagrams.
	batch, err := newBatchIO(conn, v4, max(maxBatch, groMessages), maxBatch+groMessages)
	if err != nil {
		conn.Close()
		return nil, err
	}
	c := &Conn{conn: conn, batch: batch, v4: v4}
	c.gso, c.gro = configure(conn, socketBuffer)
	if c.gro {
		c.groMsgs = make([]Message, groMessages)
		c.groBufs = make([][1][]byte, groMessages)
		for i := range c.groMsgs {
			c.groBufs[i][0] = make([]byte, 65535)
			c.groMsgs[i].Buffers = c.groBufs[i][:]
		}
	}
	for i := range c.rmsgs {
		c.rmsgs[i].Buffers = c.rbufs[i][:]
	}
	return c, nil
}

// LocalAddr returns the address the socket is bound to.
func (c *Conn) LocalAddr() netip.AddrPort {
	return c.conn.LocalAddr().(*net.UDPAddr).AddrPort()
}

// BatchSize returns the most datagrams one call should carry: 128.
func (c *Conn) BatchSize() int { return maxBatch }

// ReadBatch receives up to min(len(bufs), BatchSize()) datagrams, datagram i into bufs[i] (one
// longer than bufs[i] is cut to fit), its size in sizes[i] and its source in srcs[i], IPv4
// unmapped. It blocks until at least one arrives.
func (c *Conn) ReadBatch(bufs [][]byte, sizes []int, srcs []netip.AddrPort) (int, error) {
	if c.gro {
		return c.readGRO(bufs, sizes, srcs)
	}
	n := min(len(bufs), maxBatch)
	for i := range n {
		c.rbufs[i][0] = bufs[i]
	}
	got, err := c.batch.read(c.rmsgs[:n])
	for i := range got {
		sizes[i] = c.rmsgs[i].N
		srcs[i] = c.rmsgs[i].Addr
	}
	for i := range n {
		c.rbufs[i][0] = nil
	}
	return got, err
}

// received notes GRO message i just read, and reports whether the kernel coalesced it.
func (c *Conn) received(i int) bool {
	m := &c.groMsgs[i]
	if m.Segment > 0 && m.N > m.Segment {
		c.groCoalesced++
		c.groSlot = m.Segment
		return true
	}
	return false
}

// datagramSize returns the size of the datagrams of GRO message m: its segment size, or its
// length if the kernel did not coalesce it (at least 1, so that an empty datagram counts once).
func datagramSize(m *Message) int {
	if m.Segment > 0 {
		return m.Segment
	}
	return max(m.N, 1)
}

// readGRO hands over the datagrams of coalesced messages, reading more only when none are pending,
// so that it blocks only when it has nothing to return.
func (c *Conn) readGRO(bufs [][]byte, sizes []int, srcs []netip.AddrPort) (int, error) {
	k := 0
	for k < len(bufs) {
		if c.gi == c.gn {
			if k > 0 {
				break
			}
			n, err := c.batch.read(c.groMsgs)
			if err != nil {
				return 0, err
			}
			for i := range n {
				c.received(i)
			}
			c.gi, c.gn, c.goff = 0, n, 0
			continue
		}
		m := &c.groMsgs[c.gi]
		seg := datagramSize(m)
		if k > 0 && c.goff == 0 && (m.N+seg-1)/seg > len(bufs)-k {
			// A message the kernel coalesced is a run of one flow's datagrams, most often one
			// super-packet of the sending peer's TUN: handed over whole, its packets can be
			// coalesced again into one write to our TUN, where a run cut between two batches
			// would cost two (and the receiving TCP an extra ACK).
			break
		}
		end := min(c.goff+seg, m.N)
		// A datagram longer than bufs[k] is cut to fill it, which the device treats as truncated.
		sizes[k] = copy(bufs[k], c.groBufs[c.gi][0][c.goff:end])
		srcs[k] = m.Addr
		k++
		if c.goff = end; c.goff >= m.N {
			c.gi++
			c.goff = 0
		}
	}
	return k, nil
}

// Scattered reads. readGRO copies every datagram of a coalesced message from the large buffer the
// kernel put it in to its own buffer. ReadBuffers lets the kernel put them there: the iovecs of a
// message are the caller's buffers, each taking one datagram of the size the last coalesced
// message's had (a flow's full-size datagrams: the peer's MTU plus 32 bytes), and then a large
// buffer for what is left over. Each message gets as many buffers as a coalesced message of that
// size can have datagrams; the buffers it does not fill are handed on by reordering the caller's
// (swapping slice headers: the datagrams are never moved). A message laid out otherwise (other
// sizes, so the datagrams straddle the buffers) is gathered into its large buffer and copied apart
// as readGRO does. What one call reads beyond its buffers waits for the next call, which hands it
// over as readGRO does.

// ReadBuffers is ReadBatch into whole buffers that it may reorder: datagram i lands in
// bufs[i][offset:], and the entries of bufs may be permuted on the way, so that the datagrams the
// kernel put straight into the buffers it was given come first, without a copy. On return bufs
// holds the buffers it was given, whole. It is dataplane.UDPBufferReader.
func (c *Conn) ReadBuffers(bufs [][]byte, offset int, sizes []int, srcs []netip.AddrPort) (int, error) {
	n := min(len(bufs), maxBatch)
	seg := c.groSlot
	per := 0
	if seg > 0 {
		per = min(maxGROSegments, (maxGROBytes+seg-1)/seg)
	}
	if !c.gro || c.gi < c.gn || per == 0 || n < per {
		return c.readViews(bufs[:n], offset, sizes, srcs)
	}
	// The messages scattered over the caller's buffers, per buffers each (as far as they are long
	// enough), and then messages into their large buffers only.
	fit := 0
	for fit < n && len(bufs[fit]) >= offset+seg {
		fit++
	}
	scattered := min(len(c.groMsgs), fit/per)
	if scattered == 0 {
		return c.readViews(bufs[:n], offset, sizes, srcs)
	}
	for j := range scattered {
		start := j * per
		m := &c.groMsgs[j]
		m.Buffers = c.groIov[start+j : start+j+per+1]
		for k := range per {
			m.Buffers[k] = bufs[start+k][offset : offset+seg]
		}
		m.Buffers[per] = c.groBufs[j][0]
		c.slotStart[j] = start
	}
	iov := scattered * (per + 1)
	// While the messages come coalesced, a call asks for the scattered ones only: one more would
	// not fit the buffers left, and the next call would copy it apart.
	msgs := c.groMsgs
	if c.groWhole {
		msgs = msgs[:scattered]
	}
	got, err := c.batch.read(msgs)
	defer func() {
		clear(c.groIov[:iov])
		for i := range c.groMsgs[:scattered] {
			c.groMsgs[i].Buffers = c.groBufs[i][:]
		}
	}()
	if err != nil {
		return 0, err
	}
	w := 0        // the buffers handed over so far
	pending := -1 // the first message left to the next call
	c.groWhole = true
	for j := range got {
		m := &c.groMsgs[j]
		if !c.received(j) {
			c.groWhole = false
		}
		if pending >= 0 {
			if j < scattered {
				sysio.Gather(c.groBufs[j][0], m.N, m.Buffers[:per])
			}
			continue
		}
		size := datagramSize(m)
		count := max(1, (m.N+size-1)/size)
		if j < scattered {
			start := c.slotStart[j]
			// In place: one datagram that fit its first buffer, or datagrams of the size
			// expected, one per buffer, in bufs[start:start+count]; those buffers move to w.
			if count == 1 && m.N <= seg || size == seg && m.N <= per*seg {
				for k := range count {
					bufs[w+k], bufs[start+k] = bufs[start+k], bufs[w+k]
					sizes[w+k] = min(size, m.N-k*size)
					srcs[w+k] = m.Addr
				}
				w += count
				c.groInPlace += uint64(count)
				continue
			}
			sysio.Gather(c.groBufs[j][0], m.N, m.Buffers[:per])
		}
		// From the message's large buffer, into the buffers up to the next scattered message's.
		limit := n
		if j+1 < scattered {
			limit = c.slotStart[j+1]
		}
		if count > limit-w {
			// It does not fit: it and the messages after it go to the next call (a coalesced
			// message is not cut between batches, as in readGRO, unless nothing else came).
			goff := 0
			if w == 0 {
				for range limit {
					end := min(goff+size, m.N)
					sizes[w] = copy(bufs[w][offset:], c.groBufs[j][0][goff:end])
					srcs[w] = m.Addr
					w++
					goff = end
				}
			}
			pending = j
			c.gi, c.gn, c.goff = j, got, goff
			continue
		}
		for k := range count {
			end := min((k+1)*size, m.N)
			// A datagram longer than the buffer is cut to fill it, which the device treats as
			// truncated.
			sizes[w] = copy(bufs[w][offset:], c.groBufs[j][0][k*size:end])
			srcs[w] = m.Addr
			w++
		}
	}
	return w, nil
}

// readViews is ReadBuffers without scattering: ReadBatch into bufs[i][offset:].
func (c *Conn) readViews(bufs [][]byte, offset int, sizes []int, srcs []netip.AddrPort) (int, error) {
	views := c.groIov[:len(bufs)]
	for i := range views {
		views[i] = bufs[i][offset:]
	}
	got, err := c.ReadBatch(views, sizes, srcs)
	clear(views)
	return got, err
}

// WriteBatch sends datagram bufs[i] to dsts[i] for every i, calling sendmmsg again for any the
// kernel did not take. A message the kernel refuses (EACCES, ENETUNREACH, EHOSTUNREACH for one
// destination) is skipped and the rest of the batch still goes out: one unreachable peer never
// costs the others their datagrams. Datagrams to an IPv6 address on an IPv4 socket are skipped
// too. The error is the first refusal, if any. Writers may call it concurrently.
func (c *Conn) WriteBatch(bufs [][]byte, dsts []netip.AddrPort) error {
	_, err := c.WriteBatchReport(bufs, dsts, nil)
	return err
}

// WriteBatchReport is WriteBatch that also reports which datagrams did not go out: refused[i] is
// set to whether datagram i was refused or skipped, for every i (refused may be nil, or as long as
// bufs), and their count is returned. It is dataplane.UDPSendReporter.
func (c *Conn) WriteBatchReport(bufs [][]byte, dsts []netip.AddrPort, refused []bool) (nrefused int, first error) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	base := 0 // index in the caller's bufs of bufs[0]
	for len(bufs) > 0 {
		used := c.pack(bufs, dsts)
		// Datagrams pack skipped (wrong family) are not in wsrc: send marks every datagram of
		// the chunk refused first and clears the ones that go out.
		skipped := used - c.wiovUsed()
		nr, err := c.send(refused, base, used)
		if err != nil && c.gso && isGSOError(err) {
			c.gso = false // and send the same chunk again, a datagram per message
			continue
		}
		nrefused += nr + skipped
		if first == nil {
			first = err
		}
		bufs, dsts = bufs[used:], dsts[used:]
		base += used
	}
	return nrefused, first
}

// wiovUsed returns how many datagrams the packed messages carry.
func (c *Conn) wiovUsed() int {
	n := 0
	for i := range c.nmsgs {
		n += len(c.wmsgs[i].Buffers)
	}
	return n
}

// pack lays out as many of bufs as fit in one sendmmsg: c.wmsgs[:nmsgs] with their iovecs in
// c.wiov. It returns how many of bufs it consumed and leaves the message count in c.nmsgs.
func (c *Conn) pack(bufs [][]byte, dsts []netip.AddrPort) (used int) {
	k, iov := 0, 0
	var segSize, segBytes int
	open := false // message k-1 may take another segment
	for ; used < len(bufs) && iov < maxBatch; used++ {
		b, dst := bufs[used], dsts[used]
		if c.v4 && !dst.Addr().Unmap().Is4() {
			continue
		}
		c.wiov[iov] = b
		c.wsrc[iov] = used
		iov++
		// An empty datagram does not join: as a segment it would vanish.
		sameRun := open && dst == c.wmsgs[k-1].Addr && len(b) > 0 && len(b) <= segSize
		if sameRun && len(c.wmsgs[k-1].Buffers) < MaxGSOSegments && segBytes+len(b) <= MaxGSOBytes {
			m := &c.wmsgs[k-1]
			m.Buffers = c.wiov[iov-len(m.Buffers)-1 : iov]
			segBytes += len(b)
			open = len(b) == segSize // a shorter segment ends the message
			continue
		}
		m := &c.wmsgs[k]
		m.Buffers = c.wiov[iov-1 : iov]
		m.Addr = dst
		k++
		// A run the limits of one message cut goes on in the next however short its rest: a TSO
		// super-packet of 47 full-size segments is two messages, not one and two datagrams of
		// their own, each a message through both kernels' send and receive paths.
		segSize, segBytes = len(b), len(b)
		open = c.gso && (sameRun || gsoRun(bufs[used:], dsts[used:]) >= minGSOSegments)
	}
	for i := range k {
		m := &c.wmsgs[i]
		m.Segment = 0
		if len(m.Buffers) > 1 {
			m.Segment = len(m.Buffers[0])
			c.gsoMessages++
		}
	}
	c.nmsgs = k
	return used
}

// gsoRun returns how many of the leading datagrams of bufs, up to minGSOSegments, one GSO message
// could carry: to one destination, none longer than the first, only the last shorter.
func gsoRun(bufs [][]byte, dsts []netip.AddrPort) int {
	n, bytes := 1, len(bufs[0])
	for ; n < min(len(bufs), minGSOSegments); n++ {
		if dsts[n] != dsts[0] || len(bufs[n]) > len(bufs[0]) || len(bufs[n]) == 0 || bytes+len(bufs[n]) > MaxGSOBytes {
			break
		}
		bytes += len(bufs[n])
		if len(bufs[n]) < len(bufs[0]) {
			return n + 1
		}
	}
	return n
}

// send sends c.wmsgs[:c.nmsgs] and clears the references to the datagrams. A message the kernel
// refuses is skipped (sendmmsg reports an error only for the first message of a call: a call that
// fails sent nothing); its datagrams are marked in refused (at base plus their index in the chunk
// of used datagrams, whose others it first marks refused and then clears as they go out), and send
// returns how many were refused and the first error. A GSO error is returned at once, with nothing
// counted: the caller sends the chunk again without GSO.
func (c *Conn) send(refused []bool, base, used int) (nrefused int, first error) {
	defer func() {
		clear(c.wiov[:])
		for i := range c.nmsgs {
			c.wmsgs[i].Buffers = nil
		}
	}()
	if refused != nil {
		for i := range used {
			refused[base+i] = true
		}
	}
	iov := 0 // the first datagram of message sent in wiov
	for sent := 0; sent < c.nmsgs; {
		n, err := c.batch.write(c.wmsgs[sent:c.nmsgs])
		if err != nil && c.gso && isGSOError(err) {
			return 0, err
		}
		if err != nil {
			n = 1 // the refused message: skip it
			nrefused += len(c.wmsgs[sent].Buffers)
			if first == nil {
				first = err
			}
		}
		for m := sent; m < sent+n; m++ {
			k := len(c.wmsgs[m].Buffers)
			if err == nil && refused != nil {
				for _, i := range c.wsrc[iov : iov+k] {
					refused[base+i] = false
				}
			}
			iov += k
		}
		sent += n
	}
	return nrefused, first
}

// Close makes blocked and later calls return an error.
func (c *Conn) Close() error { return c.conn.Close() }
