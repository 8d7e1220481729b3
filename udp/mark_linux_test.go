// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package udp

import (
	"net/netip"
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

func TestUDPSetMark(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("SO_MARK needs CAP_NET_ADMIN: run as root")
	}
	c, err := Listen(netip.MustParseAddrPort("127.0.0.1:0"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, mark := range []uint32{0x51820, 0} {
		if err := c.SetMark(mark); err != nil {
			t.Fatal(err)
		}
		rc, err := c.conn.SyscallConn()
		if err != nil {
			t.Fatal(err)
		}
		var got int
		var gerr error
		rc.Control(func(fd uintptr) { got, gerr = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_MARK) })
		if gerr != nil || uint32(got) != mark {
			t.Fatalf("SO_MARK is %#x (%v) after SetMark(%#x)", got, gerr, mark)
		}
	}
}
