// Package sysio holds what the system calls of the UDP and TUN layers share: raw system calls on
// Linux (RawSyscall) and making a scattered read contiguous again (Gather).
package sysio
