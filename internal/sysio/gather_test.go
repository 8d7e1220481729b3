// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package sysio

import (
	"bytes"
	"testing"
)

// TestGather scatters a message over pieces and a spill as readv does (the pieces first, in order,
// then the spill) for every length from empty to beyond the pieces, and checks that Gather gives
// the message back contiguous in the spill.
func TestGather(t *testing.T) {
	sizes := []int{5, 3, 7}
	total := 0
	for _, s := range sizes {
		total += s
	}
	for n := 0; n <= total+20; n++ {
		msg := make([]byte, n)
		for i := range msg {
			msg[i] = byte(i + 1)
		}
		spill := make([]byte, total+20)
		pieces := make([][]byte, len(sizes))
		rest := msg
		for i, s := range sizes {
			pieces[i] = make([]byte, s)
			rest = rest[copy(pieces[i], rest):]
		}
		copy(spill, rest)
		Gather(spill, n, pieces)
		if !bytes.Equal(spill[:n], msg) {
			t.Fatalf("n=%d: gathered %v, want %v", n, spill[:n], msg)
		}
	}
}
