package dataplane

import (
	"errors"
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
// see tungro.go. Only the reading goroutine reads and only tunWriter writes.
type vnetTUN struct {
	f  *os.File
	rc syscall.RawConn
	// udpGSO: the kernel takes UDP super-packets (TUN_F_USO4/6, Linux 6.2), so datagrams may be
	// coalesced too.
	udpGSO bool
	rbuf   []byte // one read: the virtio-net header and a packet of up to 64 KiB

	// The reading goroutine's non-blocking read (see gather below for why a field): its result in
	// rn and rerr.
	rn   int
	rerr error
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
	v.peek = func(fd uintptr) bool {
		v.rn, v.rerr = unix.Read(int(fd), v.rbuf)
		return true // done, also on EAGAIN: nothing waits
	}
	v.gather = func(fd uintptr) bool {
		_, _, e := unix.Syscall(unix.SYS_WRITEV, fd, uintptr(unsafe.Pointer(&v.iovs[0])), uintptr(v.niov))
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

// Read implements TUN's Read: one read of the device, split into packets.
func (v *vnetTUN) Read(bufs [][]byte, sizes []int, offset int) (int, error) {
	n, err := v.f.Read(v.rbuf)
	if err != nil {
		if errors.Is(err, syscall.EBADFD) {
			err = os.ErrClosed
		}
		return 0, err
	}
	return tunoffload.Split(v.rbuf[:n], bufs, sizes, offset)
}

// readMore reads a packet that waits, if one does, without blocking (the file is non-blocking: a
// read that finds nothing fails with EAGAIN at once, one system call where a poll and a read would
// be two), and splits it as Read does.
func (v *vnetTUN) readMore(bufs [][]byte, sizes []int, offset int) (int, error) {
	if err := v.rc.Read(v.peek); err != nil {
		return 0, err
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
