// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package udp

import "golang.org/x/sys/unix"

// SetMark sets the socket's SO_MARK (wg(8) fwmark): the datagrams it sends carry mark, so that
// policy routing can keep them off the tunnel they carry. Zero clears it. Setting it needs
// CAP_NET_ADMIN.
func (c *Conn) SetMark(mark uint32) error {
	rc, err := c.conn.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_MARK, int(mark))
	}); err != nil {
		return err
	}
	return serr
}
