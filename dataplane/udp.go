package dataplane

// The real UDP side: one socket, a batch of datagrams per system call (recvmmsg/sendmmsg through
// golang.org/x/net's ReadBatch/WriteBatch on Linux; one datagram per call elsewhere), with socket
// buffers sized for bursts. UDP GSO and GRO are not used yet (see the package report): each datagram
// is its own message in the batch.
//
// The message arrays are allocated once. x/net still allocates a *net.UDPAddr for every received
// datagram's source, the one per-packet allocation of a Device on a real socket; the in-memory
// path (udptest) allocates nothing.

import (
	"net"
	"net/netip"
	"sync"

	"golang.org/x/net/ipv4"
	"golang.org/x/net/ipv6"
)

// SocketBuffer is the receive and send buffer size NewUDP asks for: several full batches of
// full-size datagrams, so that a burst the workers are still encrypting or decrypting is not
// dropped by the kernel. As root, the FORCE variants lift the system's rmem_max/wmem_max cap.
const SocketBuffer = 4 << 20

// udpBatch is what ipv4.PacketConn and ipv6.PacketConn have in common (their Message types are
// aliases of one type).
type udpBatch interface {
	ReadBatch(ms []ipv4.Message, flags int) (int, error)
	WriteBatch(ms []ipv4.Message, flags int) (int, error)
}

// UDPConn is a UDP socket implementing UDP.
type UDPConn struct {
	conn  *net.UDPConn
	batch udpBatch
	v4    bool // an IPv4-only socket (else dual-stack IPv6: IPv4 peers are v4-mapped)

	rmsgs [MaxBatch]ipv4.Message // used only by the one reading goroutine
	rbufs [MaxBatch][1][]byte

	wmu   sync.Mutex // serialises writers over the fields below
	wmsgs [MaxBatch]ipv4.Message
	wbufs [MaxBatch][1][]byte
	waddr [MaxBatch]net.UDPAddr
	wip   [MaxBatch][16]byte
}

// NewUDP listens on laddr: an IPv4 address gives an IPv4 socket; an IPv6 one (such as [::]:51820)
// a dual-stack socket. Port 0 picks a free port (see LocalAddr).
func NewUDP(laddr netip.AddrPort) (*UDPConn, error) {
	network := "udp6"
	v4 := laddr.Addr().Is4()
	if v4 {
		network = "udp4"
	}
	conn, err := net.ListenUDP(network, net.UDPAddrFromAddrPort(laddr))
	if err != nil {
		return nil, err
	}
	setSocketBuffers(conn, SocketBuffer)
	c := &UDPConn{conn: conn, v4: v4}
	if v4 {
		c.batch = ipv4.NewPacketConn(conn)
	} else {
		c.batch = ipv6.NewPacketConn(conn)
	}
	for i := range c.rmsgs {
		c.rmsgs[i].Buffers = c.rbufs[i][:]
		c.wmsgs[i].Buffers = c.wbufs[i][:]
		c.waddr[i].IP = c.wip[i][:]
		c.wmsgs[i].Addr = &c.waddr[i]
	}
	return c, nil
}

// LocalAddr returns the address the socket is bound to.
func (c *UDPConn) LocalAddr() netip.AddrPort {
	return c.conn.LocalAddr().(*net.UDPAddr).AddrPort()
}

// BatchSize implements UDP.
func (c *UDPConn) BatchSize() int { return MaxBatch }

// ReadBatch implements UDP. IPv4 sources on a dual-stack socket are returned unmapped.
func (c *UDPConn) ReadBatch(bufs [][]byte, sizes []int, srcs []netip.AddrPort) (int, error) {
	n := min(len(bufs), MaxBatch)
	for i := range n {
		c.rbufs[i][0] = bufs[i]
	}
	got, err := c.batch.ReadBatch(c.rmsgs[:n], 0)
	for i := range got {
		m := &c.rmsgs[i]
		sizes[i] = m.N
		srcs[i] = netip.AddrPort{}
		if a, ok := m.Addr.(*net.UDPAddr); ok {
			ap := a.AddrPort()
			srcs[i] = netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
		}
		m.Addr = nil
	}
	for i := range n {
		c.rbufs[i][0] = nil
	}
	return got, err
}

// WriteBatch implements UDP: it sends every datagram, calling sendmmsg again for any the kernel did
// not take; datagrams to an address of the wrong family for an IPv4 socket are skipped.
func (c *UDPConn) WriteBatch(bufs [][]byte, dsts []netip.AddrPort) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	for len(bufs) > 0 {
		k := 0
		i := 0
		for ; i < len(bufs) && k < MaxBatch; i++ {
			a := dsts[i].Addr()
			if c.v4 && !a.Unmap().Is4() {
				continue
			}
			c.wbufs[k][0] = bufs[i]
			if c.v4 {
				c.waddr[k].IP = c.wip[k][:4]
				ip := a.Unmap().As4()
				copy(c.waddr[k].IP, ip[:])
			} else {
				c.waddr[k].IP = c.wip[k][:16]
				ip := a.As16() // IPv4 as v4-mapped, for the dual-stack socket
				copy(c.waddr[k].IP, ip[:])
			}
			c.waddr[k].Port = int(dsts[i].Port())
			k++
		}
		bufs, dsts = bufs[i:], dsts[i:]
		for sent := 0; sent < k; {
			n, err := c.batch.WriteBatch(c.wmsgs[sent:k], 0)
			if err != nil {
				clear(c.wbufs[:k])
				return err
			}
			sent += n
		}
		clear(c.wbufs[:k])
	}
	return nil
}

// Close implements UDP.
func (c *UDPConn) Close() error { return c.conn.Close() }
