// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

// Package tunvnet is a TUN device with offloads: it reads and writes a Linux TUN device opened with
// virtio-net headers (IFF_VNET_HDR, as golang.zx2c4.com/wireguard/tun's CreateTUN opens it where
// the kernel offers offloads) through its file, and does the offloads itself, without copying or
// allocating: a read's TSO/USO super-packet is split into the caller's buffers, and a write's
// packets are coalesced into super-packets (GRO) that the kernel takes in one pass through its
// stack.
//
// New wraps a device whose file is such a TUN and reports whether it is one; its TUN has the
// packet methods of golang.zx2c4.com/wireguard/tun.Device (Read, Write, BatchSize, Close, with
// their offset rules) and the optional fast paths of package dataplane's TUN (TryRead, WriteGRO).
// dataplane.NewDevice wraps a TUN so itself where it can.
//
// The arithmetic (the virtio-net header, checksums, splitting and finishing super-packets, which
// packets a GRO coalesces) is in internal/tunoffload. Other systems than Linux have no such TUN:
// there the package has no New.
package tunvnet
