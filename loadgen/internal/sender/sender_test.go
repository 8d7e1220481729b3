// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package sender

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/wirebatch/wirebatch/loadgen/internal/clock"
	"github.com/wirebatch/wirebatch/loadgen/internal/control"
	"github.com/wirebatch/wirebatch/loadgen/internal/payload"
	"github.com/wirebatch/wirebatch/loadgen/internal/receiver"
)

func startReceiver(t *testing.T, gro bool) *receiver.Receiver {
	t.Helper()
	r, err := receiver.Listen(receiver.Config{Listen: "127.0.0.1:0", Batch: 64, GRO: gro, SocketBuffer: 4 << 20})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- r.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return r
}

func baseConfig(to string) Config {
	return Config{
		To: to, Rate: 20_000, Duration: 150 * time.Millisecond, Warmup: 100 * time.Millisecond, Interval: 40 * time.Millisecond,
		Flows: 3, Batch: 16, SocketBuffer: 4 << 20, Drain: 50 * time.Millisecond, Timeout: 2 * time.Second,
	}
}

// checkIntervals checks a run's intervals (40ms over 150ms: three and a
// 30ms one) against its totals, and the ones passed to OnInterval.
func checkIntervals(t *testing.T, cfg Config, res Result, reported []Interval) {
	t.Helper()
	bounds := [][2]time.Duration{{0, 40}, {40, 80}, {80, 120}, {120, 150}}
	if len(res.Intervals) != len(bounds) || len(reported) != len(bounds) {
		t.Fatalf("%d intervals, %d reported; want %d", len(res.Intervals), len(reported), len(bounds))
	}
	var sent, bytes, received uint64
	for k, iv := range res.Intervals {
		if iv.Start != bounds[k][0]*time.Millisecond || iv.End != bounds[k][1]*time.Millisecond {
			t.Errorf("interval %d spans %v-%v, want %vms-%vms", k, iv.Start, iv.End, bounds[k][0], bounds[k][1])
		}
		// Paced at 20k packets/s, an interval holds 800 packets (600 the
		// last), but a busy machine may stall the sender for longer than
		// an interval: only the sums are certain.
		if iv.Receiver.Received != iv.Sent || iv.Receiver.JitterNanos < 0 {
			t.Errorf("interval %d: sent %d, receiver counted %+v", k, iv.Sent, iv.Receiver)
		}
		if r := reported[k]; r.Start != iv.Start || r.Sent != iv.Sent {
			t.Errorf("interval %d reported as %+v, final %+v", k, r, iv)
		}
		sent += iv.Sent
		bytes += iv.Bytes
		received += iv.Receiver.Received
	}
	if sent != res.Sent || bytes != res.Bytes || received != res.Receiver.Counts.Received {
		t.Errorf("intervals add up to %d sent (%d bytes), %d received; totals %d (%d bytes), %d",
			sent, bytes, received, res.Sent, res.Bytes, res.Receiver.Counts.Received)
	}
}

// TestLoopbackRuns sends paced traffic over loopback through the real
// sockets and checks that every packet arrives intact and is accounted.
func TestLoopbackRuns(t *testing.T) {
	imix, err := payload.ParseSizes("imix", false)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		sizes []int
		gso   int
		gro   bool
	}{
		{"64B sendmmsg", []int{64}, 0, false},
		{"1400B gso+gro", []int{1400}, 16, true},
		{"imix gso", imix, 8, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := startReceiver(t, tt.gro)
			cfg := baseConfig(r.Addr().String())
			cfg.Sizes, cfg.GSOSegments = tt.sizes, tt.gso
			var reported []Interval // on the test's goroutine only after Run returns
			cfg.OnInterval = func(iv Interval) { reported = append(reported, iv) }
			res, err := Run(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			rc := res.Receiver
			// 20k packets/s for 150ms is 3000 packets: never more, and fewer
			// if a busy machine stalls the sender beyond pace.MaxLag, so only
			// the bound is checked here (pace's tests check the schedule).
			if res.Sent == 0 || res.Sent > 3000 {
				t.Errorf("sent %d packets, want some and at most 3000", res.Sent)
			}
			if rc.Counts.Received != res.Sent || rc.Counts.Duplicates != 0 || rc.Corrupt != 0 || rc.Stray != 0 {
				t.Errorf("sent %d, receiver counted %+v", res.Sent, rc)
			}
			if rc.Warmup == 0 || rc.Flows != 3 {
				t.Errorf("warm-up %d packets over %d flows, want some over 3", rc.Warmup, rc.Flows)
			}
			if rc.Bytes != res.Bytes {
				t.Errorf("receiver got %d payload bytes, sender sent %d", rc.Bytes, res.Bytes)
			}
			if rc.Latency.P50 <= 0 || rc.Latency.Max > int64(time.Second) || !res.SameClock || rc.LatencyOutOfRange != 0 {
				t.Errorf("latency %+v (%d out of range), same clock %v", rc.Latency, rc.LatencyOutOfRange, res.SameClock)
			}
			checkIntervals(t, cfg, res, reported)
		})
	}
}

func TestMaxRateRun(t *testing.T) {
	r := startReceiver(t, true)
	cfg := baseConfig(r.Addr().String())
	cfg.Rate, cfg.Sizes, cfg.GSOSegments, cfg.Flows, cfg.Warmup = 0, []int{1400}, 64, 1, 0
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	// Loopback may drop under overload, but never invents packets.
	if res.Sent == 0 || res.Receiver.Counts.Received == 0 || res.Receiver.Counts.Received > res.Sent || res.Receiver.Corrupt != 0 {
		t.Errorf("sent %d, received %+v", res.Sent, res.Receiver)
	}
}

func TestUnreachableReceiver(t *testing.T) {
	// A port that was just free: nobody accepts the control connection.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	cfg := baseConfig(addr)
	cfg.Sizes = []int{64}
	start := time.Now()
	_, err = Run(context.Background(), cfg)
	if err == nil || !strings.Contains(err.Error(), "receiver control connection") {
		t.Errorf("Run without a receiver: %v, want a control connection error", err)
	}
	if time.Since(start) > cfg.Timeout+time.Second {
		t.Errorf("took %v to give up", time.Since(start))
	}
}

// TestLostControlConnection runs against a control server that accepts the
// start of a run and then goes silent: the sender must give up within its
// timeout, not hang.
func TestLostControlConnection(t *testing.T) {
	r := startReceiver(t, false)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		defer conn.Close()
		buf := make([]byte, 512)
		conn.Read(buf) // the start request
		conn.Write([]byte("{\"result\":{}}\n"))
		time.Sleep(5 * time.Second) // then silence
	}()
	cfg := baseConfig(r.Addr().String())
	cfg.Control = ln.Addr().String()
	cfg.Sizes = []int{64}
	cfg.Timeout = 300 * time.Millisecond
	start := time.Now()
	_, err = Run(context.Background(), cfg)
	if err == nil || !strings.Contains(err.Error(), "control connection lost") {
		t.Errorf("Run with a silent control connection: %v, want 'control connection lost'", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("took %v to give up", d)
	}
}

// TestForeignClock runs against a control server whose clock reads far
// from this host's, as another host's would: the run must say so. The
// server also returns no interval counts: the sender must not poll for
// them in a tight loop, and still report every interval.
func TestForeignClock(t *testing.T) {
	r := startReceiver(t, false) // takes the UDP traffic
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	const foreignClock = 12345
	requests := make(chan int, 1)
	go func() {
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		defer conn.Close()
		n := 0
		lines := bufio.NewScanner(conn)
		for lines.Scan() {
			n++
			fmt.Fprintf(conn, "{\"result\":{\"clock_ns\":%d}}\n", foreignClock)
		}
		requests <- n
	}()
	cfg := baseConfig(r.Addr().String())
	cfg.Control = ln.Addr().String()
	cfg.Sizes, cfg.Duration, cfg.Warmup, cfg.Interval = []int{64}, 100*time.Millisecond, 0, 10*time.Millisecond
	reported := 0
	cfg.OnInterval = func(Interval) { reported++ }
	before := clock.Now()
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	// Start, stop and a poll for the first interval that was due, then
	// polls at most every keepAlive.
	if n := <-requests; n > 4 {
		t.Errorf("%d control requests in a 150ms run, want at most 4", n)
	}
	if reported != 10 || len(res.Intervals) != 10 {
		t.Errorf("%d intervals reported, %d in the result; want 10", reported, len(res.Intervals))
	}
	if res.SameClock {
		t.Error("a receiver clock reading 12345ns counts as this host's")
	}
	if offset := foreignClock - before; res.ClockOffset > time.Duration(offset) || res.ClockOffset < time.Duration(offset)-time.Second {
		t.Errorf("clock offset %v, want about %v", res.ClockOffset, time.Duration(offset))
	}
}

func TestValidate(t *testing.T) {
	good := baseConfig("127.0.0.1:1")
	good.Sizes = []int{64}
	if err := good.Validate(); err != nil {
		t.Fatalf("valid config rejected: %v", err)
	}
	for name, mutate := range map[string]func(*Config){
		"negative rate":  func(c *Config) { c.Rate = -1 },
		"no sizes":       func(c *Config) { c.Sizes = nil },
		"tiny size":      func(c *Config) { c.Sizes = []int{payload.HeaderSize - 1} },
		"zero duration":  func(c *Config) { c.Duration = 0 },
		"no flows":       func(c *Config) { c.Flows = 0 },
		"huge batch":     func(c *Config) { c.Batch = 5000 },
		"gso too big":    func(c *Config) { c.GSOSegments = 65 },
		"no timeout":     func(c *Config) { c.Timeout = 0 },
		"negative warm":  func(c *Config) { c.Warmup = -time.Second },
		"too many flows": func(c *Config) { c.Flows = 1<<16 + 1 },
		"negative int.":  func(c *Config) { c.Interval = -time.Second },
		"tiny interval":  func(c *Config) { c.Interval = time.Nanosecond },
	} {
		c := good
		mutate(&c)
		if err := c.Validate(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// TestBuildAllocatesNothing checks the per-burst path of the sender, with
// GSO grouping and sizes that change from message to message.
func TestBuildAllocatesNothing(t *testing.T) {
	imix, err := payload.ParseSizes("imix", false)
	if err != nil {
		t.Fatal(err)
	}
	cfg := baseConfig("127.0.0.1:1")
	cfg.Sizes, cfg.GSOSegments, cfg.Flows = imix, 8, 1
	g := newGenerator(cfg, nil, control.Grid{})
	g.seqs = make([]uint64, 1)
	allocs := testing.AllocsPerRun(100, func() { g.build(1, 0, 100, 1) })
	if allocs != 0 {
		t.Errorf("building a burst allocates %v times", allocs)
	}
	// Every message holds valid payloads with consecutive sequence numbers.
	msgs, packets, _ := g.build(1, 0, 40, 1)
	next := g.seqs[0] - uint64(packets)
	for _, m := range g.ms[:msgs] {
		buf := m.Buffers[0]
		size := len(buf)
		if m.Segment > 0 {
			size = m.Segment
		}
		for off := 0; off < len(buf); off += size {
			h, err := payload.Decode(buf[off:min(off+size, len(buf))])
			if err != nil || h.Seq != next {
				t.Fatalf("segment at %d: %+v, %v; want seq %d", off, h, err, next)
			}
			next++
		}
	}
}
