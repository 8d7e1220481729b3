// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package relay

import (
	"context"
	"encoding/binary"
	"net"
	"net/netip"
	"testing"
	"time"
)

// harness runs a relay between a left client socket and a right server socket on loopback.
type harness struct {
	relay       *Relay
	left, right *net.UDPConn
	stop        func()
}

func newHarness(t *testing.T, cfg Config) *harness {
	t.Helper()
	right, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	left, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Listen = netip.MustParseAddrPort("127.0.0.1:0")
	cfg.Target = right.LocalAddr().(*net.UDPAddr).AddrPort()
	r, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	h := &harness{relay: r, left: left, right: right}
	h.stop = func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
		left.Close()
		right.Close()
	}
	t.Cleanup(func() {
		if ctx.Err() == nil {
			h.stop()
		}
	})
	return h
}

// sendNumbered sends n datagrams of size bytes carrying their sequence number, paced so that the
// loopback socket buffers never overflow (losses must come from the relay alone).
func (h *harness) sendNumbered(t *testing.T, n, size int) {
	t.Helper()
	to := h.relay.LeftAddr()
	buf := make([]byte, size)
	for i := range n {
		binary.LittleEndian.PutUint32(buf, uint32(i))
		for j := 4; j < size; j++ {
			buf[j] = byte(i + j)
		}
		if _, err := h.left.WriteToUDPAddrPort(buf, to); err != nil {
			t.Fatal(err)
		}
		if i%64 == 63 {
			time.Sleep(time.Millisecond)
		}
	}
}

// receiveAll starts reading from c at once (so the socket buffer never overflows) and returns a
// function that waits until c has been quiet for quiet and yields every datagram in arrival order.
func receiveAll(c *net.UDPConn, quiet time.Duration) func() ([][]byte, error) {
	type result struct {
		pkts [][]byte
		err  error
	}
	done := make(chan result, 1)
	go func() {
		var out [][]byte
		buf := make([]byte, 65536)
		for {
			c.SetReadDeadline(time.Now().Add(quiet))
			n, _, err := c.ReadFromUDPAddrPort(buf)
			if err != nil {
				if ne, ok := err.(net.Error); ok && ne.Timeout() {
					err = nil
				}
				done <- result{out, err}
				return
			}
			out = append(out, append([]byte(nil), buf[:n]...))
		}
	}()
	return func() ([][]byte, error) {
		r := <-done
		return r.pkts, r.err
	}
}

func mustReceive(t *testing.T, wait func() ([][]byte, error)) [][]byte {
	t.Helper()
	pkts, err := wait()
	if err != nil {
		t.Fatal(err)
	}
	return pkts
}

func TestRelayCleanForwardsBothWays(t *testing.T) {
	// A loaded machine may drop datagrams on loopback (make test's race run once lost 20 of the
	// 500): the first leg is retried on a fresh relay, up to five tries, until the right host got
	// them all; the checks below then run on the last try.
	var h *harness
	var got [][]byte
	for try := 1; ; try++ {
		h = newHarness(t, Config{Seed: 1})
		wait := receiveAll(h.right, 300*time.Millisecond)
		h.sendNumbered(t, 500, 100)
		if got = mustReceive(t, wait); len(got) == 500 || try == 5 {
			break
		}
		h.stop()
	}
	if len(got) != 500 {
		t.Fatalf("right host got %d datagrams, want 500", len(got))
	}
	for i, p := range got {
		if seq := binary.LittleEndian.Uint32(p); seq != uint32(i) {
			t.Fatalf("datagram %d carries sequence %d: reordered without impairment", i, seq)
		}
	}
	// The right host answers the relay, which sends to the left host's last address.
	relayRight := receiveFromAddr(t, h)
	wait := receiveAll(h.left, 300*time.Millisecond)
	if _, err := h.right.WriteToUDPAddrPort([]byte("pong"), relayRight); err != nil {
		t.Fatal(err)
	}
	back := mustReceive(t, wait)
	if len(back) != 1 || string(back[0]) != "pong" {
		t.Fatalf("left host got %q, want one pong", back)
	}
	st := h.relay.Stats()
	if st.LeftToRight.Received != 501 || st.LeftToRight.Forwarded != 501 || st.RightToLeft.Forwarded != 1 {
		t.Fatalf("stats %+v", st)
	}
}

// receiveFromAddr sends one probe through the relay and returns the relay's right-hand address as the
// right host sees it.
func receiveFromAddr(t *testing.T, h *harness) netip.AddrPort {
	t.Helper()
	if _, err := h.left.WriteToUDPAddrPort([]byte("probe"), h.relay.LeftAddr()); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	h.right.SetReadDeadline(time.Now().Add(2 * time.Second))
	_, from, err := h.right.ReadFromUDPAddrPort(buf)
	if err != nil {
		t.Fatal(err)
	}
	return from
}

func TestRelayImpairmentsAreCountedAndSeeded(t *testing.T) {
	im := Impairment{Drop: 0.05, Duplicate: 0.1, Reorder: 0.25, ReorderDelay: 5 * time.Millisecond, Corrupt: 0.1, CorruptFrom: 8}
	run := func(seed uint64) (Stats, [][]byte) {
		h := newHarness(t, Config{Seed: seed, LeftToRight: im})
		wait := receiveAll(h.right, 300*time.Millisecond)
		h.sendNumbered(t, 2000, 64)
		got := mustReceive(t, wait)
		h.stop()
		return h.relay.Stats(), got
	}
	// A loaded machine may drop datagrams on loopback before the relay reads them or after it
	// forwards them, and the same seed makes the same decisions only on the same input: a run is
	// retried until the relay received all 2000 and the right host all the relay forwarded (a relay
	// that miscounts still fails the checks below after the last try).
	complete := func(seed uint64) (Stats, [][]byte) {
		for try := 1; ; try++ {
			st, got := run(seed)
			c := st.LeftToRight
			if n := c.Received; n == 2000 && uint64(len(got)) == c.Forwarded || try == 5 {
				if n != 2000 {
					t.Fatalf("relay received %d of 2000, in each of %d runs", n, try)
				}
				return st, got
			}
		}
	}
	st, got := complete(42)
	c := st.LeftToRight
	// Every datagram is dropped or forwarded, duplicates twice; the right host saw exactly the forwarded ones.
	if c.Received-c.Dropped-c.RateLimited+c.Duplicated != c.Forwarded || uint64(len(got)) != c.Forwarded {
		t.Fatalf("counts do not add up: %+v, right host got %d", c, len(got))
	}
	// With 2000 draws each probability lands well inside a generous band.
	within := func(name string, n uint64, p float64) {
		if want := 2000 * p; float64(n) < want/2 || float64(n) > want*1.5 {
			t.Errorf("%s = %d, want about %.0f", name, n, want)
		}
	}
	within("dropped", c.Dropped, 0.05)
	within("duplicated", c.Duplicated, 0.1*0.95)
	within("reordered", c.Reordered, 0.25*0.95)
	within("corrupted", c.Corrupted, 0.1*0.95)

	seen := map[uint32]int{}
	corrupt, outOfOrder := 0, 0
	last := int64(-1)
	for _, p := range got {
		seq := binary.LittleEndian.Uint32(p)
		seen[seq]++
		if int64(seq) < last {
			outOfOrder++
		}
		last = max(last, int64(seq))
		if p[4] != byte(int(seq)+4) || p[5] != byte(int(seq)+5) {
			t.Fatalf("bytes before CorruptFrom changed in datagram %d", seq)
		}
		for j := 8; j < len(p); j++ {
			if p[j] != byte(int(seq)+j) {
				corrupt++
				break
			}
		}
	}
	// A corrupted datagram that is also duplicated arrives corrupted twice.
	if uint64(corrupt) < c.Corrupted || uint64(corrupt) > 2*c.Corrupted {
		t.Errorf("right host saw %d corrupted datagrams, relay corrupted %d", corrupt, c.Corrupted)
	}
	if corrupt == 0 || outOfOrder == 0 {
		t.Errorf("no corruption (%d) or reordering (%d) visible at the receiver", corrupt, outOfOrder)
	}
	if uint64(len(seen)) != c.Received-c.Dropped {
		t.Errorf("%d distinct datagrams arrived, want %d", len(seen), c.Received-c.Dropped)
	}

	// The same seed makes the same decisions.
	st2, _ := complete(42)
	if st2.LeftToRight != st.LeftToRight {
		t.Errorf("seed 42 gave %+v, then %+v", st.LeftToRight, st2.LeftToRight)
	}
}

func TestRelayRateLimit(t *testing.T) {
	h := newHarness(t, Config{Seed: 3, LeftToRight: Impairment{RatePPS: 10, RateBurst: 5}})
	wait := receiveAll(h.right, 300*time.Millisecond)
	h.sendNumbered(t, 50, 32) // sent in well under 100 ms: the burst passes, little else
	got := mustReceive(t, wait)
	st := h.relay.Stats().LeftToRight
	if len(got) < 5 || len(got) > 8 || st.RateLimited != 50-uint64(len(got)) {
		t.Fatalf("forwarded %d of 50 at 10 pps burst 5; stats %+v", len(got), st)
	}
}

func TestImpairmentValidation(t *testing.T) {
	for _, im := range []Impairment{{Drop: 1.5}, {Corrupt: -0.1}, {Reorder: 0.5}, {RatePPS: -1}, {CorruptFrom: -1}} {
		if _, err := New(Config{Listen: netip.MustParseAddrPort("127.0.0.1:0"), Target: netip.MustParseAddrPort("127.0.0.1:9"), LeftToRight: im}); err == nil {
			t.Errorf("%+v accepted", im)
		}
	}
	if _, err := New(Config{Listen: netip.MustParseAddrPort("127.0.0.1:0")}); err == nil {
		t.Error("missing Target accepted")
	}
}
