// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

// Package udp moves UDP datagrams a batch per system call: on Linux recvmmsg and sendmmsg, with UDP
// generic segmentation offload on send (UDP_SEGMENT, Linux 4.18: one message carries a run of
// datagrams of one size, which the kernel or the NIC cuts apart) and generic receive offload on
// receive (UDP_GRO, Linux 5.0: the kernel hands a run of one flow's datagrams over as one message,
// with their size in a control message). Elsewhere it falls back to golang.org/x/net's batch calls,
// which move a datagram per system call, without the offloads.
//
// It has two sockets over one message layer (Message, and on Linux the mmsghdr arrays and the
// control messages of the offloads):
//
//   - Conn, a data plane's socket: a datagram per buffer in the shape of tun.Device.Read
//     (ReadBatch, WriteBatch), with GSO runs and GRO messages packed and cut apart inside,
//     non-blocking in Go's netpoller, safe for concurrent writers. It is dataplane.UDP with both
//     of its optional fast paths (ReadBuffers, WriteBatchReport).
//   - BlockingConn (Linux), a load generator's: whole messages (Message.Segment says how they are
//     cut), blocking system calls from one goroutine, outside the netpoller.
//
// Neither allocates per call or per datagram once running: the message arrays are made once, and
// sources are parsed into addresses kept per message.
package udp
