// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package tuntest

import (
	"bytes"
	"errors"
	"os"
	"testing"
	"time"
)

func TestSendReadWrite(t *testing.T) {
	var got [][]byte
	tun := New(100, 2, func(pkts [][]byte) {
		for _, p := range pkts {
			got = append(got, append([]byte{}, p...))
		}
	})
	done := make(chan error)
	go func() { done <- tun.Send([]byte("one"), []byte("two"), []byte("three")) }() // the third waits for room
	bufs := [][]byte{make([]byte, 110), make([]byte, 110)}
	sizes := make([]int, 2)
	var read []string
	for len(read) < 3 {
		n, err := tun.Read(bufs, sizes, 10)
		if err != nil {
			t.Fatal(err)
		}
		for i := range n {
			read = append(read, string(bufs[i][10:10+sizes[i]]))
		}
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if read[0] != "one" || read[1] != "two" || read[2] != "three" {
		t.Fatalf("read %q", read)
	}
	if n, err := tun.Write([][]byte{[]byte("xxhello")}, 2); n != 1 || err != nil || len(got) != 1 || !bytes.Equal(got[0], []byte("hello")) {
		t.Fatalf("Write: %d %v %q", n, err, got)
	}
}

func TestCloseWakesWaiters(t *testing.T) {
	tun := New(100, 1, nil)
	errs := make(chan error, 2)
	go func() {
		_, err := tun.Read([][]byte{make([]byte, 100)}, make([]int, 1), 0)
		errs <- err
	}()
	if err := tun.Send([]byte("a")); err != nil { // fills the queue... unless the reader took it
		t.Fatal(err)
	}
	go func() { errs <- tun.Send([]byte("b"), []byte("c")) }()
	time.Sleep(10 * time.Millisecond)
	tun.Close()
	for range 2 {
		select {
		case err := <-errs:
			if err != nil && !errors.Is(err, os.ErrClosed) {
				t.Fatal(err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("a waiter was not woken by Close")
		}
	}
	if _, err := tun.Read([][]byte{make([]byte, 100)}, make([]int, 1), 0); !errors.Is(err, os.ErrClosed) {
		t.Fatalf("Read after Close: %v", err)
	}
	if _, err := tun.Write([][]byte{[]byte("x")}, 0); !errors.Is(err, os.ErrClosed) {
		t.Fatalf("Write after Close: %v", err)
	}
}
