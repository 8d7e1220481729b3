// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package tunvnet

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/wirebatch/wirebatch/internal/sysio"
	"github.com/wirebatch/wirebatch/internal/tunoffload"
)

// FileTUN is what New needs of a TUN device: its file, and Close. golang.zx2c4.com/wireguard/tun's
// Device has both.
type FileTUN interface {
	File() *os.File
	Close() error
}

// TUN reads and writes a Linux TUN device opened with IFF_VNET_HDR through its file, doing the
// offloads itself: a read's TSO/USO super-packet is split into the caller's buffers (package
// tunoffload, its checksums without allocating), and a write's packets are coalesced into
// super-packets (see coalesce.go). It has the methods of golang.zx2c4.com/wireguard/tun.Device's
// packet side, with the same offset rules, and those of package dataplane's optional fast paths
// (TryRead, WriteGRO). Read and TryRead are serialised with each other, Write and WriteGRO with
// each other; a read and a write may run at once.
type TUN struct {
	dev FileTUN
	rc  syscall.RawConn
	// udpGSO: the kernel takes UDP super-packets (TUN_F_USO4/6, Linux 6.2), so datagrams may be
	// coalesced too.
	udpGSO bool

	// readMu serialises Read and TryRead, which own the fields from here to slots.
	readMu sync.Mutex
	rbuf   []byte // a read the caller's buffers do not take: the virtio-net header and a packet of up to 64 KiB

	// A read's system call (see gather below for why fields): read waits for a packet,
	// peek does not; their iovecs riov[:nriov] (the caller's buffers in pieces[:slots], then
	// rbuf), their result in rn and rerr.
	riov   [batchSize + 1]unix.Iovec
	pieces [batchSize][]byte
	nriov  int
	rn     int
	rerr   error
	read   func(fd uintptr) bool
	peek   func(fd uintptr) bool

	// Scattered reads (see aim): the header and segment sizes of the last super-packet read,
	// which the next read's iovecs expect (zero before the first), and how many of the caller's
	// buffers the read under way is scattered over (zero: it goes to rbuf whole).
	hdrLen, segSize int
	slots           int

	// writeMu serialises Write and WriteGRO, which own the fields from here on.
	writeMu sync.Mutex
	co      coalescer
	// A write's writev: iovs[:niov] for gather (made once: a closure made per call
	// to RawConn.Write would be allocated), its result in werr.
	iovs   [batchSize]unix.Iovec
	niov   int
	werr   error
	gather func(fd uintptr) bool
}

// tunTCPOffloads are the offloads every IFF_VNET_HDR TUN has had since Linux 2.6; tunUDPOffloads came
// with Linux 6.2. They are what golang.zx2c4.com/wireguard/tun asks for too.
const (
	tunTCPOffloads = unix.TUN_F_CSUM | unix.TUN_F_TSO4 | unix.TUN_F_TSO6
	tunUDPOffloads = unix.TUN_F_USO4 | unix.TUN_F_USO6
)

// New returns a TUN on dev's file if that file is a Linux TUN with virtio-net headers (as
// golang.zx2c4.com/wireguard/tun's CreateTUN opens it where the kernel offers offloads), with the
// offloads it does set (TCP, and UDP where the kernel has it); else nil and false, and dev is to be
// used as it is. From then on the TUN reads and writes dev's file: dev's own Read and Write must
// not be called. Its Close closes dev.
func New(dev FileTUN) (*TUN, bool) {
	f := dev.File()
	if f == nil {
		return nil, false
	}
	// SyscallConn, unlike Fd, leaves the file non-blocking and in the runtime's poller.
	rc, err := f.SyscallConn()
	if err != nil {
		return nil, false
	}
	vnet, udpGSO := false, false
	rc.Control(func(fd uintptr) {
		ifr, err := unix.NewIfreq("")
		if err != nil || unix.IoctlIfreq(int(fd), unix.TUNGETIFF, ifr) != nil || ifr.Uint16()&unix.IFF_VNET_HDR == 0 {
			return
		}
		udpGSO = unix.IoctlSetInt(int(fd), unix.TUNSETOFFLOAD, tunTCPOffloads|tunUDPOffloads) == nil
		vnet = udpGSO || unix.IoctlSetInt(int(fd), unix.TUNSETOFFLOAD, tunTCPOffloads) == nil
	})
	if !vnet {
		return nil, false
	}
	return newTUN(dev, rc, udpGSO), true
}

// newTUN returns a TUN on rc, the file of dev, a TUN with virtio-net headers whose offloads are
// set.
func newTUN(dev FileTUN, rc syscall.RawConn, udpGSO bool) *TUN {
	t := &TUN{dev: dev, rc: rc, udpGSO: udpGSO}
	t.co = coalescer{w: t, udpGSO: udpGSO}
	t.rbuf = make([]byte, tunoffload.HeaderLen+65535)
	t.read = func(fd uintptr) bool {
		t.rawRead(fd)
		return t.rerr != unix.EAGAIN // else wait until the TUN has a packet
	}
	t.peek = func(fd uintptr) bool {
		t.rawRead(fd)
		return true // done, also on EAGAIN: nothing waits
	}
	t.gather = func(fd uintptr) bool {
		_, e := sysio.RawSyscall(unix.SYS_WRITEV, fd, uintptr(unsafe.Pointer(&t.iovs[0])), uintptr(t.niov), 0)
		if e == unix.EAGAIN {
			return false // wait until the TUN's queue takes it
		}
		t.werr = nil
		if e != 0 {
			t.werr = e
		}
		return true
	}
	return t
}

// BatchSize is the most packets one Read returns from a super-packet (it splits it into that many
// buffers at most) and one write system call gathers.
func (t *TUN) BatchSize() int { return batchSize }

// Close closes the device (FileTUN's Close): blocked and later calls fail.
func (t *TUN) Close() error { return t.dev.Close() }

// rawRead reads one packet from the non-blocking TUN file into riov[:nriov] (a readv), as a raw
// system call (see package sysio), leaving its result in rn and rerr.
func (t *TUN) rawRead(fd uintptr) {
	n, e := sysio.RawSyscall(unix.SYS_READV, fd, uintptr(unsafe.Pointer(&t.riov[0])), uintptr(t.nriov), 0)
	t.rn, t.rerr = int(n), nil
	if e != 0 {
		t.rn, t.rerr = 0, e
	}
}

// Read reads one packet from the device, waiting for it, and splits it into packets: packet i
// into bufs[i][offset:], its length in sizes[i]. A super-packet of more segments than bufs, or
// one its virtio-net header does not describe, is dropped with an error (tunoffload.ErrMalformed,
// ErrTooManySegments); later reads go on. It returns os.ErrClosed once the device is closed.
func (t *TUN) Read(bufs [][]byte, sizes []int, offset int) (int, error) {
	t.readMu.Lock()
	defer t.readMu.Unlock()
	t.aim(bufs, offset)
	defer t.unaim()
	if err := t.rc.Read(t.read); err != nil {
		return 0, fileClosed(err)
	}
	if t.rerr != nil {
		if errors.Is(t.rerr, syscall.EBADFD) {
			return 0, os.ErrClosed
		}
		return 0, t.rerr
	}
	return t.split(bufs, sizes, offset)
}

// TryRead is Read without the wait: it reads a packet that waits, if one does, and returns 0 and
// nil at once if none does. The file is non-blocking: a read that finds nothing fails with EAGAIN
// at once, one system call where a poll and a read would be two.
func (t *TUN) TryRead(bufs [][]byte, sizes []int, offset int) (int, error) {
	t.readMu.Lock()
	defer t.readMu.Unlock()
	t.aim(bufs, offset)
	defer t.unaim()
	if err := t.rc.Read(t.peek); err != nil {
		return 0, fileClosed(err)
	}
	if t.rerr == unix.EAGAIN {
		return 0, nil
	}
	if t.rerr != nil {
		return 0, t.rerr
	}
	return t.split(bufs, sizes, offset)
}

// Scattered reads. A TSO super-packet read into rbuf is copied apart into the buffers, segment by
// segment (tunoffload.Split). Instead, a read's iovecs put each segment's payload where Split would
// copy it: the virtio-net header, the headers and the first segment's payload into bufs[0] (from
// offset-HeaderLen), segment i's payload into bufs[i] behind the room for its headers, then rbuf
// for whatever is left over; tunoffload.SplitScattered only writes the headers. The iovecs expect
// the header and segment sizes of the last super-packet read: a TCP stream's stay the same (its
// headers and MSS). A packet without GSO up to the headers and a segment long (the MTU, for such a
// stream) lands whole in bufs[0]: no copy either. A read laid out otherwise (other sizes, more
// segments than buffers) is gathered into rbuf (sysio.Gather) and split from there: one more copy
// than a read into rbuf, and the next read expects its sizes.

// aim points the read's iovecs at bufs (see above), or at rbuf alone before the first super-packet.
func (t *TUN) aim(bufs [][]byte, offset int) {
	hl, seg := t.hdrLen, t.segSize
	t.slots = 0
	if seg > 0 && offset >= tunoffload.HeaderLen {
		most := min(len(bufs), len(t.pieces), (65535-hl+seg-1)/seg)
		for t.slots < most && len(bufs[t.slots]) >= offset+hl+seg {
			t.slots++
		}
	}
	if t.slots == 0 {
		setIovec(&t.riov[0], t.rbuf)
		t.nriov = 1
		return
	}
	t.pieces[0] = bufs[0][offset-tunoffload.HeaderLen : offset+hl+seg]
	for i := 1; i < t.slots; i++ {
		t.pieces[i] = bufs[i][offset+hl : offset+hl+seg]
	}
	for i, p := range t.pieces[:t.slots] {
		setIovec(&t.riov[i], p)
	}
	setIovec(&t.riov[t.slots], t.rbuf)
	t.nriov = t.slots + 1
}

// unaim drops the references to the caller's buffers (not kept alive from here).
func (t *TUN) unaim() {
	clear(t.riov[:t.nriov])
	clear(t.pieces[:t.slots])
}

// setIovec points iov at b, which is not empty.
func setIovec(iov *unix.Iovec, b []byte) {
	iov.Base = &b[0]
	iov.SetLen(len(b))
}

// split splits the read (rn bytes, laid out by aim) into packets and learns its sizes.
func (t *TUN) split(bufs [][]byte, sizes []int, offset int) (int, error) {
	if t.slots > 0 {
		n, ok, err := tunoffload.SplitScattered(bufs[:t.slots], sizes, offset, t.hdrLen, t.segSize, t.rn)
		if ok {
			return n, err
		}
		sysio.Gather(t.rbuf, t.rn, t.pieces[:t.slots])
	}
	in := t.rbuf[:t.rn]
	if hl, seg := tunoffload.Layout(in); seg > 0 {
		t.hdrLen, t.segSize = hl, seg
	}
	return tunoffload.Split(in, bufs, sizes, offset)
}

// fileClosed returns the error of a RawConn.Read or Write that did not run its function: the only
// reason, with no deadline set, is that the file is closed or closing (internal/poll's
// ErrFileClosing, which os.File's own methods report as os.ErrClosed).
func fileClosed(err error) error {
	return fmt.Errorf("%w (%v)", os.ErrClosed, err)
}

// errOffset is returned by a write whose offset leaves no room for the virtio-net header.
var errOffset = fmt.Errorf("tunvnet: a write's offset must leave %d bytes for the virtio-net header", tunoffload.HeaderLen)

// Write writes packet bufs[i][offset:] for every i, the TCP segments and UDP datagrams that continue
// one another coalesced into super-packets (see coalesce.go). It edits the packets' headers and
// writes the virtio-net header into the headroom before offset, which must be at least
// tunoffload.HeaderLen (10) bytes; it needs no capacity after the packets. It returns len(bufs), or
// the number of packets the device took and the first error.
func (t *TUN) Write(bufs [][]byte, offset int) (int, error) {
	_, n, err := t.write(bufs, offset)
	return n, err
}

// WriteGRO is Write that returns the number of its writes to the device that failed (a super-packet
// is one write), for package dataplane's Device, which counts them, and the first error.
func (t *TUN) WriteGRO(bufs [][]byte, offset int) (failed int, err error) {
	failed, _, err = t.write(bufs, offset)
	return failed, err
}

// write is Write, returning the failed writes too.
func (t *TUN) write(bufs [][]byte, offset int) (failed, written int, err error) {
	if offset < tunoffload.HeaderLen {
		return 1, 0, errOffset
	}
	t.writeMu.Lock()
	defer t.writeMu.Unlock()
	for len(bufs) > 0 {
		n := min(len(bufs), batchSize)
		f, w, e := t.co.write(bufs[:n], offset)
		failed, written = failed+f, written+w
		if err == nil {
			err = e
		}
		bufs = bufs[n:]
	}
	return failed, written, err
}

// writev writes one packet gathered from iov (gatherWriter).
func (t *TUN) writev(iov [][]byte) error {
	for i, b := range iov {
		setIovec(&t.iovs[i], b)
	}
	t.niov = len(iov)
	err := t.rc.Write(t.gather)
	clear(t.iovs[:len(iov)]) // the caller's buffers are not kept alive from here
	if err != nil {
		return fileClosed(err)
	}
	if errors.Is(t.werr, syscall.EBADFD) {
		return os.ErrClosed
	}
	return t.werr
}
