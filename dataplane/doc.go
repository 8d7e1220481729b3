// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

// Package dataplane is the WireGuard transport data path: it turns batches of IP packets read from a
// TUN device into transport data messages for UDP, and batches of received datagrams back into IP
// packets, with one multi-packet AEAD call (package kernels) per batch and no allocation in the
// steady state.
//
// It owns the message format (WireGuard paper, section 5.4.6), keypairs with their counters and
// limits (section 6), the RFC 6479 anti-replay window, cryptokey routing (allowed IPs, section 3),
// the encrypt and decrypt stages, and a Device that runs them between a TUN device and a UDP socket.
// It does not do the handshake.
//
// # Pieces
//
//   - PeerSet: peers (PeerConfig: endpoint, allowed IPs), the AllowedIPs trie, the index table of
//     installed keypairs, counters. InstallKeypair takes the plain KeypairConfig a handshake
//     produces; Observer hears PeerEvents and KeypairRetired.
//   - Encrypter and Decrypter: the stages, one per worker goroutine, over a Packets batch (the
//     shape of tun.Device.Read: bufs, sizes, one offset). Every packet gets a Verdict.
//   - Device: the pipeline between a TUN and a UDP (interfaces; packages tuntest and udptest have
//     the in-memory doubles), driven by a Handshaker. A TUN may offer optional fast paths
//     (TUNTryReader, TUNGROWriter), and so may a UDP: UDPBufferReader (datagrams straight into the
//     packet buffers) and UDPSendReporter (refused datagrams counted on their peers).
//
// # Beside it
//
//   - Package udp (github.com/wirebatch/wirebatch/udp) is the UDP socket layer: recvmmsg and
//     sendmmsg with UDP GSO and GRO on Linux; its Conn is the real UDP, with both fast paths.
//   - Package tunvnet (github.com/wirebatch/wirebatch/tunvnet) is the TUN offload layer: a Linux TUN
//     with virtio-net headers as a TUN with both fast paths; NewDevice puts it on such a TUN itself.
//
// # Driving it from package handshake
//
// A Handshaker adapts the handshake package (see its package documentation) to a Device:
//
//	HandleHandshake(msg, src):  res, err := hs.HandleMessage(msg, src)
//	                            res.Reply != nil: dev.SendHandshake(src, res.Reply)
//	                            res.Keypair != nil: dev.InstallKeypair(peerOf(res.Peer), KeypairConfig{...}); wipe it
//	PeerEvent(p, ev):           EventKeypairConfirmed:                 hp.KeypairConfirmed()
//	                            EventDataReceived/EventKeepaliveReceived: hp.PacketReceived(p.Endpoint(), data?)
//	                            EventDataSent/EventKeepaliveSent:       hp.PacketSent(data?)
//	                            EventRekeyNeeded, EventNoKeypair:       initiate (CreateInitiation, SendHandshake)
//	KeypairRetired(kp):         hs.Indices().Release(kp.LocalIndex())
//	timer actions:              ActionSendKeepalive: dev.SendKeepalive(p); ActionZeroKeys: p.ExpireKeypairs()
//	                            ActionGiveUp: dev.DropStaged(p); ActionSendInitiation: initiate
//
// The data path enforces the key limits itself (protocol.RejectAfterTime, protocol.RejectAfterMessages: VerdictKeyExpired)
// and asks for rekeys (protocol.RekeyAfterTime for the initiator, protocol.RekeyAfterMessages, and on receive near
// protocol.RejectAfterTime); the control plane decides when to act. A Device keeps the last MaxStaged packets
// that found no usable keypair per peer (EventNoKeypair) and sends them once a keypair may send;
// ActionGiveUp maps to Device.DropStaged. PeerEvent may call any Device method; KeypairRetired runs
// under the peer's lock and must not call back for that peer.
//
// # Memory and order
//
// A Device allocates its packet memory once, as one batch.Pool of 2*Config.Batches+1 batches (a
// batch per unit of each direction and one for control sends, within Config.MaxMemory), and
// recycles the batches and their units through rings, so its memory is fixed whatever the load;
// under overload the readers wait and the kernel's queues drop. Batches leave each direction in the order they were read, so packets of one peer keep
// their order. See device.go for the pipeline, keypair.go for how retired keys are wiped safely.
package dataplane
