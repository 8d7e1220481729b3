// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

// Package device is a WireGuard interface with wireguard-go's API: a Device between any
// golang.zx2c4.com/wireguard tun.Device and conn.Bind, configured at run time over the cross-platform
// UAPI (IpcSet, IpcGet, IpcHandle for wg(8)'s socket), brought up and down with Up and Down. An
// embedder of wireguard-go's device package changes its import path and nothing else for the common
// calls:
//
//	dev := device.NewDevice(tunDevice, conn.NewDefaultBind(), device.NewLogger(device.LogLevelError, "wg0: "))
//	err := dev.IpcSet("private_key=...\nlisten_port=51820\npublic_key=...\nallowed_ip=10.0.0.2/32\n")
//	err = dev.Up()
//	...
//	dev.Close()
//
// Underneath, a dataplane.Device moves the packets in batches (multi-packet AEAD, recvmmsg and GSO
// with the standard bind, virtio-net offloads with a Linux TUN), and a handshake.ControlPlane makes
// the sessions and runs the timers. Every setting applies to the running interface without
// recreating the TUN or disturbing the other peers: a new private key expires every session (the
// next packet handshakes again), a new listen port rebinds the sockets, fwmark marks the open
// sockets at once.
//
// Differences from wireguard-go: with the standard bind the Device opens its own batched sockets on
// the same port (see NewDevice); an MTU change of the TUN after NewDevice is logged, not applied
// (the data path sizes its buffers once); tx_bytes and rx_bytes count transport messages (handshake
// messages are not counted); an IPv4-mapped IPv6 endpoint is kept and reported as the IPv4 address;
// Down keeps the peers' timers running, and what they would send fails until Up.
package device
