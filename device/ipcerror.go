// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package device

import "fmt"

// IPCError is the error of a UAPI operation: the wrapped error and the errno (negative, as the
// configuration protocol's "errno=" line carries it) from package golang.zx2c4.com/wireguard/ipc:
// IpcErrorInvalid for a bad key or value, IpcErrorPortInUse when the listen port or fwmark cannot
// be applied, IpcErrorProtocol for a line without '=', IpcErrorIO for a failed read or write.
type IPCError struct {
	code int64
	err  error
}

func ipcErrorf(code int64, format string, args ...any) *IPCError {
	return &IPCError{code: code, err: fmt.Errorf(format, args...)}
}

func (e IPCError) Error() string { return fmt.Sprintf("IPC error %d: %v", e.code, e.err) }

// Unwrap returns the underlying error.
func (e IPCError) Unwrap() error { return e.err }

// ErrorCode returns the errno the configuration protocol reports.
func (e IPCError) ErrorCode() int64 { return e.code }
