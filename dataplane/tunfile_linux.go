// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package dataplane

// What the Device does with a TUN that exposes its file (File() *os.File, as
// golang.zx2c4.com/wireguard/tun's devices do): read and write it through package tunvnet if it is
// a TUN with virtio-net headers, else poll it to top batches up (see TUNTryReader).

import (
	"os"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/wirebatch/wirebatch/tunvnet"
)

// offloadTUN returns tunvnet's TUN on t's file if t exposes its file and that file is a TUN with
// virtio-net headers, else t.
func offloadTUN(t TUN) TUN {
	if f, ok := t.(tunvnet.FileTUN); ok {
		if v, ok := tunvnet.New(f); ok {
			return v
		}
	}
	return t
}

// tunPoller tells whether a TUN device's file has a packet waiting, without reading it.
type tunPoller struct {
	rc    syscall.RawConn
	fds   [1]unix.PollFd
	ready bool
	check func(fd uintptr) // made once: a closure made per call to Control would be allocated
}

// newTunPoller returns a poller for a TUN that exposes its file (golang.zx2c4.com/wireguard/tun's
// devices do), or nil.
func newTunPoller(t TUN) *tunPoller {
	_, rc := tunFile(t)
	if rc == nil {
		return nil
	}
	p := &tunPoller{rc: rc}
	p.check = func(fd uintptr) {
		p.fds[0] = unix.PollFd{Fd: int32(fd), Events: unix.POLLIN}
		n, err := unix.Poll(p.fds[:], 0)
		p.ready = err == nil && n > 0 && p.fds[0].Revents&unix.POLLIN != 0
	}
	return p
}

// readable reports whether a packet is waiting, so that a Read would return at once.
func (p *tunPoller) readable() bool {
	p.ready = false
	if p.rc.Control(p.check) != nil {
		return false
	}
	return p.ready
}

// tunFile returns the file of a TUN that exposes it (golang.zx2c4.com/wireguard/tun's devices do)
// and its raw connection, or nil, nil. SyscallConn, unlike Fd, leaves the file non-blocking and in
// the runtime's poller.
func tunFile(t TUN) (*os.File, syscall.RawConn) {
	f, ok := t.(interface{ File() *os.File })
	if !ok || f.File() == nil {
		return nil, nil
	}
	rc, err := f.File().SyscallConn()
	if err != nil {
		return nil, nil
	}
	return f.File(), rc
}
