// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

// Package sysio holds what the system calls of the UDP and TUN layers share: the size of their
// batches (MaxBatch), raw system calls on Linux (RawSyscall) and making a scattered read contiguous
// again (Gather).
package sysio

// MaxBatch is the most packets the data path moves with one batched call: one recvmmsg or
// sendmmsg of package udp, one write of package tunvnet's coalescer, and the packets of one batch
// of package batch, which the stages seal or open with one kernels call. It is wireguard-go's
// conn.IdealBatchSize, what its tun package hands over from one offloaded read, and eight full
// loads of the 16 lanes of the widest AEAD kernels.
const MaxBatch = 128
