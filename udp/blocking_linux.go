// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package udp

import (
	"errors"
	"fmt"
	"net/netip"
	"time"

	"golang.org/x/sys/unix"
)

// ErrTimeout is returned by BlockingConn.ReadBatch when nothing arrived within the read timeout.
var ErrTimeout = errors.New("udp: read timeout")

// BlockingConn is a UDP socket driven by one goroutine in blocking system calls, outside Go's
// netpoller: a load generator's. Go registers every socket it manages (a *net.UDPConn, a Conn) with
// its epoll netpoller for readability and writability, and the kernel then runs the epoll callback,
// and wakes the netpoller's thread, each time a sent buffer is freed (sock_wfree, sk_write_space),
// which on loopback and veth is once per packet: for a sender of small packets at full rate that
// is a large share of its CPU time. A socket outside epoll has no such wake-ups, and the runtime
// hands the P of a goroutine blocked in it to other work.
//
// Its messages are the caller's: it builds GSO messages (Message.Segment) and cuts the ones the
// kernel coalesced apart itself. A BlockingConn is used by one goroutine at a time.
type BlockingConn struct {
	fd    int
	v4    bool // an IPv4 socket: sockaddr_in destinations
	local netip.AddrPort
	m     mmsgs
}

// DialBlocking opens a BlockingConn connected to raddr (so that messages need no destination) on an
// ephemeral source port.
func DialBlocking(raddr netip.AddrPort) (*BlockingConn, error) {
	c, sa, err := openBlocking(raddr)
	if err != nil {
		return nil, err
	}
	if err := unix.Connect(c.fd, sa); err != nil {
		c.Close()
		return nil, fmt.Errorf("connect %v: %w", raddr, err)
	}
	if err := c.setLocal(); err != nil {
		return nil, err
	}
	return c, nil
}

// ListenBlocking opens a BlockingConn bound to laddr. Without a host (laddr.Addr() not valid) it
// listens on IPv6 and IPv4 alike.
func ListenBlocking(laddr netip.AddrPort) (*BlockingConn, error) {
	c, sa, err := openBlocking(laddr)
	if err != nil {
		return nil, err
	}
	if err := unix.Bind(c.fd, sa); err != nil {
		c.Close()
		return nil, fmt.Errorf("bind %v: %w", laddr, err)
	}
	if err := c.setLocal(); err != nil {
		return nil, err
	}
	return c, nil
}

// openBlocking opens a socket of addr's family and returns addr as its sockaddr.
func openBlocking(addr netip.AddrPort) (*BlockingConn, unix.Sockaddr, error) {
	a := addr.Addr().Unmap()
	family := unix.AF_INET6
	var sa unix.Sockaddr
	if a.Is4() {
		family = unix.AF_INET
		sa = &unix.SockaddrInet4{Port: int(addr.Port()), Addr: a.As4()}
	} else {
		sa6 := &unix.SockaddrInet6{Port: int(addr.Port())}
		if a.IsValid() {
			var z zoneCache
			sa6.Addr, sa6.ZoneId = a.As16(), z.index(a.Zone())
		}
		sa = sa6
	}
	fd, err := unix.Socket(family, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, unix.IPPROTO_UDP)
	if err != nil {
		return nil, nil, fmt.Errorf("udp socket: %w", err)
	}
	if family == unix.AF_INET6 && !a.IsValid() {
		// Dual stack regardless of net.ipv6.bindv6only.
		unix.SetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_V6ONLY, 0)
	}
	return &BlockingConn{fd: fd, v4: family == unix.AF_INET}, sa, nil
}

// setLocal records the address the socket is bound to; on failure it closes the socket.
func (c *BlockingConn) setLocal() error {
	sa, err := unix.Getsockname(c.fd)
	if err != nil {
		c.Close()
		return err
	}
	switch sa := sa.(type) {
	case *unix.SockaddrInet4:
		c.local = netip.AddrPortFrom(netip.AddrFrom4(sa.Addr), uint16(sa.Port))
	case *unix.SockaddrInet6:
		c.local = netip.AddrPortFrom(netip.AddrFrom16(sa.Addr).Unmap(), uint16(sa.Port))
	}
	return nil
}

// LocalAddr returns the address the socket is bound to, IPv4 unmapped.
func (c *BlockingConn) LocalAddr() netip.AddrPort { return c.local }

// Close closes the socket; later calls do nothing. Close must not run concurrently with other
// methods: a closed descriptor number may be reused at once.
func (c *BlockingConn) Close() error {
	if c.fd < 0 {
		return nil
	}
	fd := c.fd
	c.fd = -1
	return unix.Close(fd)
}

// SetReadTimeout makes ReadBatch return ErrTimeout after d without data (SO_RCVTIMEO), so that a
// reader can notice that it should stop.
func (c *BlockingConn) SetReadTimeout(d time.Duration) error {
	tv := unix.NsecToTimeval(d.Nanoseconds())
	return unix.SetsockoptTimeval(c.fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)
}

// SetBuffers asks for socket buffers of size bytes each way, first past the system's rmem_max and
// wmem_max (which needs CAP_NET_ADMIN), then within them. Deep buffers absorb a receiver's
// scheduling hiccups, which would otherwise show up as loss that the network did not cause.
func (c *BlockingConn) SetBuffers(size int) error { return setBuffers(c.fd, size) }

// EnableGRO asks the kernel to coalesce arriving datagrams (UDP_GRO, Linux 5.0); ReadBatch then
// reports their size in Message.Segment.
func (c *BlockingConn) EnableGRO() error {
	if err := enableGRO(c.fd); err != nil {
		return fmt.Errorf("UDP_GRO: %w", err)
	}
	return nil
}

// CheckGSO returns an error if the kernel cannot send messages with Message.Segment set
// (UDP_SEGMENT, Linux 4.18).
func (c *BlockingConn) CheckGSO() error {
	if err := probeGSO(c.fd); err != nil {
		return fmt.Errorf("UDP_SEGMENT (GSO): %w", err)
	}
	return nil
}

// WriteBatch sends all of ms, calling sendmmsg again for any the kernel did not take in one call,
// and sets each message's N. It stops at the first error (on a connected socket, ECONNREFUSED
// after the peer's ICMP port unreachable).
func (c *BlockingConn) WriteBatch(ms []Message) error {
	if len(ms) == 0 {
		return nil
	}
	c.m.fill(ms, true, c.v4)
	sent := 0
	var err error
	for sent < len(ms) {
		var n int
		if n, err = blockingCall(c.fd, unix.SYS_SENDMMSG, c.m.hdrs[sent:len(ms)], 0); err != nil {
			break
		}
		sent += n
	}
	c.m.done(ms, sent, true)
	return err
}

// ReadBatch receives up to len(ms) messages with one recvmmsg, blocking until at least one arrives
// or the read timeout passes (ErrTimeout), and sets each received message's N, Addr and Segment.
func (c *BlockingConn) ReadBatch(ms []Message) (int, error) {
	n, err := c.recv(ms, unix.MSG_WAITFORONE)
	if err == unix.EAGAIN {
		return 0, ErrTimeout
	}
	return n, err
}

// TryReadBatch is ReadBatch without waiting: it returns 0 and no error when nothing is queued.
func (c *BlockingConn) TryReadBatch(ms []Message) (int, error) {
	n, err := c.recv(ms, unix.MSG_DONTWAIT)
	if err == unix.EAGAIN {
		return 0, nil
	}
	return n, err
}

func (c *BlockingConn) recv(ms []Message, flags int) (int, error) {
	if len(ms) == 0 {
		return 0, nil
	}
	c.m.fill(ms, false, c.v4)
	n, err := blockingCall(c.fd, unix.SYS_RECVMMSG, c.m.hdrs[:len(ms)], flags)
	c.m.done(ms, n, false)
	return n, err
}
