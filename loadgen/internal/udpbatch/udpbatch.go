// Package udpbatch moves UDP datagrams a batch per system call: sendmmsg and
// recvmmsg, with UDP generic segmentation offload (GSO: one message carries
// many equal-sized datagrams, split by the kernel or the NIC; the
// UDP_SEGMENT control message, Linux 4.18) and generic receive offload (GRO:
// the kernel hands many datagrams of one flow over as one message, with
// their size in a UDP_GRO control message, Linux 5.0).
//
// Sockets here are blocking and deliberately not *net.UDPConn. Go registers
// every net socket with its epoll netpoller for readability and
// writability; the kernel then runs the epoll callback (and wakes the
// netpoller's thread) each time a sent skb is freed (sock_wfree ->
// sk_write_space), which on loopback and veth is once per packet. Measured
// here (perf, 64-byte packets over loopback), nearly half of the sender's
// CPU time went to those callbacks and the task switches they caused
// (~38k/s), and a batching sender fell behind iperf3's plain write(2) loop. A socket outside epoll, driven by one goroutine in blocking system
// calls, has no such wake-ups; the runtime hands the goroutine's P to other
// work while it blocks. golang.org/x/net's ipv4.PacketConn.WriteBatch and
// ReadBatch need a net.Conn and so inherit the cost; this package calls
// sendmmsg and recvmmsg itself, with preallocated headers, allocating
// nothing per batch.
//
// A Conn is used by one goroutine at a time.
package udpbatch

import (
	"errors"
	"fmt"
	"net"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// MaxSegments is the most datagrams loadgen puts in one GSO message; it is
// the kernel's UDP_MAX_SEGMENTS of Linux 4.18 to 6.x (later kernels allow 128).
const MaxSegments = 64

// MaxMessage is the most bytes of payload in one GSO message: the segments
// plus one UDP and IPv6 header must fit a 64 KiB IP packet.
const MaxMessage = 65535 - 8 - 40

// ErrTimeout is returned by ReadBatch when nothing arrived within the
// Conn's read timeout.
var ErrTimeout = errors.New("udpbatch: read timeout")

// Message is one datagram (or, with GSO and GRO, a train of them).
type Message struct {
	// Buf holds the data to send, or receives it (N bytes).
	Buf []byte
	// OOB holds control messages to send, or receives them (NN bytes).
	OOB []byte
	// N and NN are set by ReadBatch.
	N, NN int
}

// mmsghdr is struct mmsghdr of sendmmsg(2): a msghdr and the byte count
// the kernel sets, padded to the msghdr's alignment.
type mmsghdr struct {
	hdr unix.Msghdr
	n   uint32
	_   [unsafe.Sizeof(uintptr(0)) - 4]byte
}

// Conn is a blocking UDP socket with batch I/O.
type Conn struct {
	fd   int
	hdrs []mmsghdr
	iovs []unix.Iovec
}

// Dial opens a socket connected to addr (so sends need no destination) on
// an ephemeral source port.
func Dial(addr *net.UDPAddr) (*Conn, error) {
	c, sa, err := open(addr)
	if err != nil {
		return nil, err
	}
	if err := unix.Connect(c.fd, sa); err != nil {
		c.Close()
		return nil, fmt.Errorf("connect %v: %w", addr, err)
	}
	return c, nil
}

// Listen opens a socket bound to addr. An unspecified host listens on IPv6
// and IPv4 alike.
func Listen(addr *net.UDPAddr) (*Conn, error) {
	c, sa, err := open(addr)
	if err != nil {
		return nil, err
	}
	if err := unix.Bind(c.fd, sa); err != nil {
		c.Close()
		return nil, fmt.Errorf("bind %v: %w", addr, err)
	}
	return c, nil
}

func open(addr *net.UDPAddr) (*Conn, unix.Sockaddr, error) {
	family := unix.AF_INET6
	var sa unix.Sockaddr
	if ip4 := addr.IP.To4(); ip4 != nil {
		family = unix.AF_INET
		sa4 := &unix.SockaddrInet4{Port: addr.Port}
		copy(sa4.Addr[:], ip4)
		sa = sa4
	} else {
		sa6 := &unix.SockaddrInet6{Port: addr.Port}
		copy(sa6.Addr[:], addr.IP.To16()) // nil IP: the unspecified address
		sa = sa6
	}
	fd, err := unix.Socket(family, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, unix.IPPROTO_UDP)
	if err != nil {
		return nil, nil, fmt.Errorf("udp socket: %w", err)
	}
	if family == unix.AF_INET6 && addr.IP == nil {
		// Dual stack regardless of net.ipv6.bindv6only.
		unix.SetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_V6ONLY, 0)
	}
	return &Conn{fd: fd}, sa, nil
}

// Close closes the socket; later calls do nothing. Close must not run
// concurrently with other methods: a closed descriptor number may be
// reused at once.
func (c *Conn) Close() error {
	if c.fd < 0 {
		return nil
	}
	fd := c.fd
	c.fd = -1
	return unix.Close(fd)
}

// LocalAddr returns the address the socket is bound to.
func (c *Conn) LocalAddr() (*net.UDPAddr, error) {
	sa, err := unix.Getsockname(c.fd)
	if err != nil {
		return nil, err
	}
	switch sa := sa.(type) {
	case *unix.SockaddrInet4:
		return &net.UDPAddr{IP: net.IP(sa.Addr[:]).To16(), Port: sa.Port}, nil
	case *unix.SockaddrInet6:
		return &net.UDPAddr{IP: net.IP(sa.Addr[:]), Port: sa.Port}, nil
	}
	return nil, fmt.Errorf("udp socket bound to an unexpected address %T", sa)
}

// SetReadTimeout makes ReadBatch return ErrTimeout after d without data
// (SO_RCVTIMEO), so a reader can notice that it should stop.
func (c *Conn) SetReadTimeout(d time.Duration) error {
	tv := unix.NsecToTimeval(d.Nanoseconds())
	return unix.SetsockoptTimeval(c.fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)
}

// SetBuffers asks for socket buffers of bytes each way, first past the
// net.core.{r,w}mem_max limits (SO_RCVBUFFORCE needs CAP_NET_ADMIN), then
// within them. Deep buffers absorb a receiver's scheduling hiccups, which
// would otherwise show up as loss that the network did not cause.
func (c *Conn) SetBuffers(bytes int) error {
	for _, opts := range [][2]int{{unix.SO_RCVBUFFORCE, unix.SO_RCVBUF}, {unix.SO_SNDBUFFORCE, unix.SO_SNDBUF}} {
		if unix.SetsockoptInt(c.fd, unix.SOL_SOCKET, opts[0], bytes) != nil {
			if err := unix.SetsockoptInt(c.fd, unix.SOL_SOCKET, opts[1], bytes); err != nil {
				return err
			}
		}
	}
	return nil
}

// EnableGRO asks the kernel to coalesce arriving datagrams (UDP_GRO). The
// reader must then split messages with udpoffload.SegmentSize.
func (c *Conn) EnableGRO() error {
	if err := unix.SetsockoptInt(c.fd, unix.SOL_UDP, unix.UDP_GRO, 1); err != nil {
		return fmt.Errorf("UDP_GRO: %w", err)
	}
	return nil
}

// CheckGSO reports whether the kernel accepts UDP_SEGMENT on this socket;
// setting a segment size of 0 as a socket option changes nothing (sends
// without the control message stay unsegmented).
func (c *Conn) CheckGSO() error {
	if err := unix.SetsockoptInt(c.fd, unix.SOL_UDP, unix.UDP_SEGMENT, 0); err != nil {
		return fmt.Errorf("UDP_SEGMENT (GSO): %w", err)
	}
	return nil
}

// pack points the first len(ms) headers at ms's buffers.
func (c *Conn) pack(ms []Message) {
	if len(c.hdrs) < len(ms) {
		c.hdrs = make([]mmsghdr, len(ms))
		c.iovs = make([]unix.Iovec, len(ms))
	}
	for i := range ms {
		iov, h := &c.iovs[i], &c.hdrs[i]
		*h = mmsghdr{}
		iov.Base = unsafe.SliceData(ms[i].Buf)
		iov.SetLen(len(ms[i].Buf))
		h.hdr.Iov = iov
		h.hdr.SetIovlen(1)
		if len(ms[i].OOB) > 0 {
			h.hdr.Control = unsafe.SliceData(ms[i].OOB)
			h.hdr.SetControllen(len(ms[i].OOB))
		}
	}
}

// WriteBatch sends all of ms on a connected socket, calling sendmmsg again
// for any the kernel did not take in one call.
func (c *Conn) WriteBatch(ms []Message) error {
	c.pack(ms)
	hdrs := c.hdrs[:len(ms)]
	for len(hdrs) > 0 {
		n, _, errno := unix.Syscall6(unix.SYS_SENDMMSG, uintptr(c.fd),
			uintptr(unsafe.Pointer(&hdrs[0])), uintptr(len(hdrs)), 0, 0, 0)
		switch {
		case errno == unix.EINTR:
			continue
		case errno != 0:
			return errno
		}
		hdrs = hdrs[n:]
	}
	return nil
}

// ReadBatch receives up to len(ms) messages with one recvmmsg, blocking
// until at least one arrives (MSG_WAITFORONE) or the read timeout passes
// (ErrTimeout), and sets each received message's N and NN.
func (c *Conn) ReadBatch(ms []Message) (int, error) {
	n, err := c.recvmmsg(ms, unix.MSG_WAITFORONE)
	if err == unix.EAGAIN {
		return 0, ErrTimeout
	}
	return n, err
}

// TryReadBatch is ReadBatch without waiting: it returns 0 and no error
// when nothing is queued.
func (c *Conn) TryReadBatch(ms []Message) (int, error) {
	n, err := c.recvmmsg(ms, unix.MSG_DONTWAIT)
	if err == unix.EAGAIN {
		return 0, nil
	}
	return n, err
}

func (c *Conn) recvmmsg(ms []Message, flags int) (int, error) {
	c.pack(ms)
	for {
		n, _, errno := unix.Syscall6(unix.SYS_RECVMMSG, uintptr(c.fd),
			uintptr(unsafe.Pointer(&c.hdrs[0])), uintptr(len(ms)), uintptr(flags), 0, 0)
		if errno == unix.EINTR {
			continue
		}
		if errno != 0 {
			return 0, errno
		}
		for i := range ms[:n] {
			ms[i].N = int(c.hdrs[i].n)
			ms[i].NN = int(c.hdrs[i].hdr.Controllen)
		}
		return int(n), nil
	}
}
