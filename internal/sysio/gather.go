// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package sysio

// Gather makes the n bytes that a scattered read put into pieces, and then into spill, contiguous
// in spill: the part spill took moves to where it belongs, then the pieces are copied in front of
// it. A scattered read's iovecs are the caller's packet buffers and then one large buffer, the
// spill, for what they do not take; when what it read is not laid out as the reader expected, the
// reader gathers it and goes on from the spill. spill must hold n bytes.
func Gather(spill []byte, n int, pieces [][]byte) {
	in := 0
	for _, p := range pieces {
		in += len(p)
	}
	if n > in {
		copy(spill[in:n], spill[:n-in])
	}
	at := 0
	for _, p := range pieces {
		if at >= n {
			break
		}
		at += copy(spill[at:n], p)
	}
}
