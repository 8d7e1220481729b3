// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

//go:build !linux

package dataplane

// offloadTUN returns t: TUNs with virtio-net headers (package tunvnet) are Linux's.
func offloadTUN(t TUN) TUN { return t }

// tunPoller is Linux only: elsewhere a batch is what one TUN read returns.
type tunPoller struct{}

func newTunPoller(TUN) *tunPoller   { return nil }
func (p *tunPoller) readable() bool { return false }
