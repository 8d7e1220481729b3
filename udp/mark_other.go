// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

//go:build !linux

package udp

// SetMark does nothing where the system has no SO_MARK (as wireguard-go's binds there).
func (c *Conn) SetMark(mark uint32) error { return nil }
