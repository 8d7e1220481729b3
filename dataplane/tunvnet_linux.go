package dataplane

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/wirebatch/wirebatch/internal/tunoffload"
)

// vnetTUN reads and writes a Linux TUN device opened with IFF_VNET_HDR (golang.zx2c4.com/wireguard/tun's
// CreateTUN opens it so where the kernel allows) through its file, doing the offloads itself instead of
// the tun package's Read and Write: a read's TSO/USO super-packet is split into the Device's buffers
// (package tunoffload, its checksums without the tun package's allocations); writes are tunCoalescer's
// packets, which it coalesces after verifying their checksums, as wireguard-go's GRO does (kernel
// WireGuard instead marks decrypted packets CHECKSUM_UNNECESSARY, drivers/net/wireguard/receive.c):
// see tungro.go. Only the reading goroutine reads, and only the inbound commit (one worker at a
// time) writes.
type vnetTUN struct {
	f  *os.File
	rc syscall.RawConn
	// udpGSO: the kernel takes UDP super-packets (TUN_F_USO4/6, Linux 6.2), so datagrams may be
	// coalesced too.
	udpGSO bool
	rbuf   []byte // one read: the virtio-net header and a packet of up to 64 KiB

	// The reading goroutine's reads (see gather below for why fields): read waits for a packet,
	// peek does not; their result in rn and rerr.
	rn   int
	rerr error
	read func(fd uintptr) bool
	peek func(fd uintptr) bool

	// The writing goroutine's writev: iovs[:niov] for gather (made once: a closure made per call
	// to RawConn.Write would be allocated), its result in werr.
	iovs   [MaxBatch]unix.Iovec
	niov   int
	werr   error
	gather func(fd uintptr) bool
}

// tunTCPOffloads are the offloads every IFF_VNET_HDR TUN has had since Linux 2.6; tunUDPOffloads came
// with Linux 6.2. They are what the tun package asks for too.
const (
	tunTCPOffloads = unix.TUN_F_CSUM | unix.TUN_F_TSO4 | unix.TUN_F_TSO6
	tunUDPOffloads = unix.TUN_F_USO4 | unix.TUN_F_USO6
)

// newVnetTUN returns a vnetTUN for t if t exposes its file (File() *os.File) and that file is a TUN
// with virtio-net headers, else nil.
func newVnetTUN(t TUN) *vnetTUN {
	f, rc := tunFile(t)
	if rc == nil {
		return nil
	}
	v := &vnetTUN{f: f, rc: rc}
	vnet := false
	rc.Control(func(fd uintptr) {
		ifr, err := unix.NewIfreq("")
		if err != nil || unix.IoctlIfreq(int(fd), unix.TUNGETIFF, ifr) != nil || ifr.Uint16()&unix.IFF_VNET_HDR == 0 {
			return
		}
		v.udpGSO = unix.IoctlSetInt(int(fd), unix.TUNSETOFFLOAD, tunTCPOffloads|tunUDPOffloads) == nil
		vnet = v.udpGSO || unix.IoctlSetInt(int(fd), unix.TUNSETOFFLOAD, tunTCPOffloads) == nil
	})
	if !vnet {
		return nil
	}
	v.rbuf = make([]byte, tunoffload.HeaderLen+65535)
	v.read = func(fd uintptr) bool {
		v.rawRead(fd)
		return v.rerr != unix.EAGAIN // else wait until the TUN has a packet
	}
	v.peek = func(fd uintptr) bool {
		v.rawRead(fd)
		return true // done, also on EAGAIN: nothing waits
	}
	v.gather = func(fd uintptr) bool {
		_, e := rawSyscall(unix.SYS_WRITEV, fd, uintptr(unsafe.Pointer(&v.iovs[0])), uintptr(v.niov), 0)
		if e == unix.EAGAIN {
			return false // wait until the TUN's queue takes it
		}
		v.werr = nil
		if e != 0 {
			v.werr = e
		}
		return true
	}
	return v
}

// rawRead reads one packet from the non-blocking TUN file into rbuf, as a raw system call (see
// "Raw system calls" in udp_mmsg_linux.go), leaving its result in rn and rerr.
func (v *vnetTUN) rawRead(fd uintptr) {
	n, e := rawSyscall(unix.SYS_READ, fd, uintptr(unsafe.Pointer(&v.rbuf[0])), uintptr(len(v.rbuf)), 0)
	v.rn, v.rerr = int(n), nil
	if e != 0 {
		v.rn, v.rerr = 0, e
	}
}

// Read implements TUN's Read: one read of the device, split into packets.
func (v *vnetTUN) Read(bufs [][]byte, sizes []int, offset int) (int, error) {
	if err := v.rc.Read(v.read); err != nil {
		return 0, fileClosed(err)
	}
	if v.rerr != nil {
		if errors.Is(v.rerr, syscall.EBADFD) {
			return 0, os.ErrClosed
		}
		return 0, v.rerr
	}
	return tunoffload.Split(v.rbuf[:v.rn], bufs, sizes, offset)
}

// fileClosed returns the error of a RawConn.Read or Write that did not run its function: the only
// reason, with no deadline set, is that the file is closed or closing (internal/poll's
// ErrFileClosing, which os.File's own methods report as os.ErrClosed).
func fileClosed(err error) error {
	return fmt.Errorf("%w (%v)", os.ErrClosed, err)
}

// readMore reads a packet that waits, if one does, without blocking (the file is non-blocking: a
// read that finds nothing fails with EAGAIN at once, one system call where a poll and a read would
// be two), and splits it as Read does.
func (v *vnetTUN) readMore(bufs [][]byte, sizes []int, offset int) (int, error) {
	if err := v.rc.Read(v.peek); err != nil {
		return 0, fileClosed(err)
	}
	if v.rerr == unix.EAGAIN {
		return 0, nil
	}
	if v.rerr != nil {
		return 0, v.rerr
	}
	return tunoffload.Split(v.rbuf[:v.rn], bufs, sizes, offset)
}

// writev writes one packet gathered from iov (at most MaxBatch slices, none empty), which starts
// with its virtio-net header: a TUN takes one packet per write.
func (v *vnetTUN) writev(iov [][]byte) error {
	for i, b := range iov {
		v.iovs[i].Base = &b[0]
		v.iovs[i].SetLen(len(b))
	}
	v.niov = len(iov)
	err := v.rc.Write(v.gather)
	clear(v.iovs[:len(iov)]) // the pool's buffers are not kept alive from here
	if err != nil {
		return err
	}
	return v.werr
}
