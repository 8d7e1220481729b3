// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package netnstests

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/netip"
	"testing"
	"time"
)

// TestE2ETCP sends a TCP stream each way between every pairing of our tunnel and wireguard-go and
// checks that it arrives intact. The kernel hands a tunnel TSO super-packets to split and takes
// coalesced ones, so this checks what UDP traffic does not: the TCP checksums of the segments we
// cut (a peer, or its kernel, drops a segment whose checksum is wrong, and the stream would stall
// in retransmissions) and the order and contents of the super-packets we coalesce.
func TestE2ETCP(t *testing.T) {
	checkLeaks(t)
	for _, c := range []struct{ a, b impl }{{ours, ours}, {ours, wireguardGo}, {wireguardGo, ours}} {
		t.Run(fmt.Sprintf("%s and %s", c.a.name, c.b.name), func(t *testing.T) {
			tp := newTopo(t, topoConfig{A: c.a, B: c.b})
			tp.start()
			reach(t, tp.A, tp.B, 10*time.Second)
			// Counted from here: the first probes waited for the handshake as no_key drops.
			beforeA, _ := tp.A.snapshot()
			beforeB, _ := tp.B.snapshot()
			tcpStream(t, tp.A, tp.B, 64<<20)
			tcpStream(t, tp.B, tp.A, 64<<20)
			for _, e := range []struct {
				*end
				before counters
			}{{tp.A, beforeA}, {tp.B, beforeB}} {
				if after, ok := e.stop(); ok {
					wantNoDrops(t, e.end, after.sub(e.before))
				}
			}
		})
	}
}

// tcpStream sends n pseudo-random bytes over a TCP connection from one end's inner address to the
// other's and fails the test unless exactly they arrive within a minute.
func tcpStream(t *testing.T, from, to *end, n int64) {
	t.Helper()
	const port = 9100
	var ln net.Listener
	if err := to.ns.Do(func() (err error) {
		ln, err = net.Listen("tcp4", netip.AddrPortFrom(to.inner, port).String())
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	type result struct {
		n   int64
		sum [sha256.Size]byte
		err error
	}
	got := make(chan result, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- result{err: err}
			return
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(time.Minute))
		h := sha256.New()
		m, err := io.Copy(h, c)
		var r result
		r.n, r.err = m, err
		h.Sum(r.sum[:0])
		got <- r
	}()
	var conn net.Conn
	if err := from.ns.Do(func() (err error) {
		conn, err = net.DialTimeout("tcp4", netip.AddrPortFrom(to.inner, port).String(), 10*time.Second)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	conn.SetDeadline(time.Now().Add(time.Minute))
	h := sha256.New()
	src := io.TeeReader(io.LimitReader(rand.NewChaCha8([32]byte{1}), n), h)
	start := time.Now()
	if _, err := io.Copy(conn, src); err != nil {
		t.Fatalf("%v -> %v: sending: %v", from, to, err)
	}
	conn.Close()
	r := <-got
	if r.err != nil || r.n != n || !bytes.Equal(r.sum[:], h.Sum(nil)) {
		t.Fatalf("%v -> %v: %d of %d bytes arrived (%v), contents intact: %v", from, to, r.n, n, r.err, bytes.Equal(r.sum[:], h.Sum(nil)))
	}
	t.Logf("%v -> %v: %d MiB in %v", from, to, n>>20, time.Since(start).Round(time.Millisecond))
}
