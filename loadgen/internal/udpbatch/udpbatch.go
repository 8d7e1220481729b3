// Package udpbatch moves UDP datagrams a batch per system call: sendmmsg and
// recvmmsg through golang.org/x/net's WriteBatch and ReadBatch, with UDP
// generic segmentation offload (GSO: one message carries many equal-sized
// datagrams, split by the kernel or the NIC; the UDP_SEGMENT control
// message, Linux 4.18) and generic receive offload (GRO: the kernel hands
// many datagrams of one flow over as one message, with their size in a
// UDP_GRO control message, Linux 5.0).
package udpbatch

import (
	"errors"
	"fmt"
	"net"
	"unsafe"

	"golang.org/x/net/ipv4"
	"golang.org/x/net/ipv6"
	"golang.org/x/sys/unix"
)

// MaxSegments is the most datagrams loadgen puts in one GSO message; it is
// the kernel's UDP_MAX_SEGMENTS of Linux 4.18 to 6.x (later kernels allow 128).
const MaxSegments = 64

// MaxMessage is the most bytes of payload in one GSO message: the segments
// plus one UDP and IPv6 header must fit a 64 KiB IP packet.
const MaxMessage = 65535 - 8 - 40

// batcher is what ipv4.PacketConn and ipv6.PacketConn have in common; their
// Message types are both aliases of one type.
type batcher interface {
	ReadBatch(ms []ipv4.Message, flags int) (int, error)
	WriteBatch(ms []ipv4.Message, flags int) (int, error)
}

// Conn is a UDP socket with batch I/O.
type Conn struct {
	UDP   *net.UDPConn
	batch batcher
}

// New wraps c. The address family of c's local address picks the x/net
// package (an unspecified host listens on IPv6, dual-stack).
func New(c *net.UDPConn) *Conn {
	if a, ok := c.LocalAddr().(*net.UDPAddr); ok && a.IP.To4() != nil {
		return &Conn{UDP: c, batch: ipv4.NewPacketConn(c)}
	}
	return &Conn{UDP: c, batch: ipv6.NewPacketConn(c)}
}

// ReadBatch receives up to len(ms) messages with one recvmmsg, waiting for
// at least one. Each message's N and NN give its data and control lengths.
func (c *Conn) ReadBatch(ms []ipv4.Message) (int, error) {
	return c.batch.ReadBatch(ms, 0)
}

// WriteBatch sends all of ms, calling sendmmsg again for any the kernel did
// not take in one call.
func (c *Conn) WriteBatch(ms []ipv4.Message) error {
	for len(ms) > 0 {
		n, err := c.batch.WriteBatch(ms, 0)
		if err != nil {
			return err
		}
		ms = ms[n:]
	}
	return nil
}

// SetBuffers asks for socket buffers of bytes each way, first past the
// net.core.{r,w}mem_max limits (SO_RCVBUFFORCE needs CAP_NET_ADMIN), then
// within them. Deep buffers absorb a receiver's scheduling hiccups, which
// would otherwise show up as loss that the network did not cause.
func (c *Conn) SetBuffers(bytes int) error {
	raw, err := c.UDP.SyscallConn()
	if err != nil {
		return err
	}
	var sockErr error
	err = raw.Control(func(fd uintptr) {
		for _, opts := range [][2]int{{unix.SO_RCVBUFFORCE, unix.SO_RCVBUF}, {unix.SO_SNDBUFFORCE, unix.SO_SNDBUF}} {
			if unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, opts[0], bytes) != nil {
				if err := unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, opts[1], bytes); err != nil {
					sockErr = err
				}
			}
		}
	})
	return errors.Join(err, sockErr)
}

// EnableGRO asks the kernel to coalesce arriving datagrams (UDP_GRO). The
// reader must then split messages with SegmentSize.
func (c *Conn) EnableGRO() error {
	return c.setUDPOption(unix.UDP_GRO, 1, "UDP_GRO")
}

// CheckGSO reports whether the kernel accepts UDP_SEGMENT on this socket;
// setting a segment size of 0 as a socket option changes nothing (sends
// without the control message stay unsegmented).
func (c *Conn) CheckGSO() error {
	return c.setUDPOption(unix.UDP_SEGMENT, 0, "UDP_SEGMENT (GSO)")
}

func (c *Conn) setUDPOption(opt, value int, name string) error {
	raw, err := c.UDP.SyscallConn()
	if err != nil {
		return err
	}
	var sockErr error
	if err := raw.Control(func(fd uintptr) {
		sockErr = unix.SetsockoptInt(int(fd), unix.SOL_UDP, opt, value)
	}); err != nil {
		return err
	}
	if sockErr != nil {
		return fmt.Errorf("%s: %w", name, sockErr)
	}
	return nil
}

// SegmentControlSize is the space a UDP_SEGMENT control message takes.
var SegmentControlSize = unix.CmsgSpace(2)

// PutSegmentSize writes a UDP_SEGMENT control message asking the kernel to
// split the message's data into datagrams of size bytes (the last may be
// shorter). oob must hold SegmentControlSize bytes; it returns the part used.
func PutSegmentSize(oob []byte, size int) []byte {
	oob = oob[:SegmentControlSize]
	clear(oob)
	h := (*unix.Cmsghdr)(unsafe.Pointer(&oob[0]))
	h.Level = unix.SOL_UDP
	h.Type = unix.UDP_SEGMENT
	h.SetLen(unix.CmsgLen(2))
	*(*uint16)(unsafe.Pointer(&oob[unix.CmsgLen(0)])) = uint16(size)
	return oob
}

// GROControlSize is enough space for the UDP_GRO control message a receiver
// with EnableGRO gets.
var GROControlSize = unix.CmsgSpace(4)

// SegmentSize returns the datagram size of a coalesced message from its
// control data (the UDP_GRO control message), or 0 when the message is a
// single datagram.
func SegmentSize(oob []byte) int {
	for len(oob) >= unix.CmsgLen(0) {
		h := (*unix.Cmsghdr)(unsafe.Pointer(&oob[0]))
		n := int(h.Len)
		if n < unix.CmsgLen(0) || n > len(oob) {
			return 0
		}
		data := oob[unix.CmsgLen(0):n]
		if h.Level == unix.SOL_UDP && h.Type == unix.UDP_GRO {
			// The kernel writes an int (udp_cmsg_recv); older ones a u16.
			switch len(data) {
			case 4:
				return int(*(*int32)(unsafe.Pointer(&data[0])))
			case 2:
				return int(*(*uint16)(unsafe.Pointer(&data[0])))
			}
			return 0
		}
		oob = oob[min(len(oob), unix.CmsgSpace(len(data))):]
	}
	return 0
}
