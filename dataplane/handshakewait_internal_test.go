// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package dataplane

import "testing"

// TestWaitQueueMemory: a peer's staging ring exists only while packets wait: allocated by the first
// push, wiped and released when drain or drop empties it (its memory is outside MaxMemory).
func TestWaitQueueMemory(t *testing.T) {
	var s waitQueue
	if s.buf != nil {
		t.Fatal("a new waitQueue holds memory")
	}
	for i := range MaxStaged + 3 {
		s.push([]byte{byte(i), 1, 2, 3}, 1420)
	}
	if len(s.buf) != MaxStaged*1420 || s.n != MaxStaged {
		t.Fatalf("after %d pushes: %d bytes, %d packets", MaxStaged+3, len(s.buf), s.n)
	}
	buf := s.buf
	bufs := make([][]byte, 8)
	for i := range bufs {
		bufs[i] = make([]byte, 2048)
	}
	sizes := make([]int, 8)
	for s.n > 0 {
		s.drain(bufs, sizes, 0)
	}
	if s.buf != nil {
		t.Fatal("the drained waitQueue still holds its ring")
	}
	for _, b := range buf {
		if b != 0 {
			t.Fatal("the released ring was not wiped")
		}
	}
	s.push([]byte{1}, 1420)
	if s.drop() != 1 || s.buf != nil {
		t.Fatal("drop left the ring allocated")
	}
}
