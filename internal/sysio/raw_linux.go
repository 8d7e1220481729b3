// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package sysio

// The data path's system calls (the UDP socket's recvmmsg and sendmmsg, the TUN's readv and
// writev) are raw: issued with RawSyscall, without telling the Go scheduler. Their files are
// non-blocking, so no call waits (one that would fails with EAGAIN, and the goroutine parks in the
// runtime's poller through RawConn), and each call's work is bounded by a batch.
//
// Told of a system call (Syscall), the runtime marks the goroutine's P as in a system call, and
// sysmon hands a P whose call is still running at its next look to another thread, if the P has
// other goroutines queued or no other P is idle (runtime/proc.go, retake); every such hand-off also
// sets sysmon's period back to 20 us, where an idle sysmon backs off to 10 ms. The data path's
// calls are long enough to be seen: sendmmsg with UDP GSO also runs the receiving socket's path
// through a veth, and a TUN's writev runs the receiving TCP stack. A busy pipeline would lose CPU
// time to those hand-offs and to the threads they wake. Raw, a call keeps its P, which the
// scheduler sees as running: a goroutine readied meanwhile runs when the call returns (tens of
// microseconds at most) or on another P that is idle, and sysmon backs off.

import "golang.org/x/sys/unix"

// RawSyscall issues a raw system call (see above) of up to four arguments, again if a signal
// interrupted it. It must only be used on a non-blocking file.
func RawSyscall(trap, a1, a2, a3, a4 uintptr) (uintptr, unix.Errno) {
	for {
		r, _, e := unix.RawSyscall6(trap, a1, a2, a3, a4, 0, 0)
		if e != unix.EINTR {
			return r, e
		}
	}
}
