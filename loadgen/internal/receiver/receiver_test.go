// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package receiver

import (
	"context"
	"net"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wirebatch/wirebatch/loadgen/internal/clock"
	"github.com/wirebatch/wirebatch/loadgen/internal/control"
	"github.com/wirebatch/wirebatch/loadgen/internal/payload"
)

// startReceiver runs a receiver on a loopback port until the test ends.
func startReceiver(t *testing.T, cfg Config) *Receiver {
	t.Helper()
	cfg.Listen = "127.0.0.1:0"
	if cfg.Batch == 0 {
		cfg.Batch = 8
	}
	r, err := Listen(cfg)
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

func packet(run uint32, flow uint16, seq uint64, size int) []byte {
	return packetSentAt(run, flow, seq, size, clock.Now())
}

func packetSentAt(run uint32, flow uint16, seq uint64, size int, send int64) []byte {
	p := make([]byte, size)
	payload.Fill(p)
	payload.Encode(p, payload.Header{Run: run, Flow: flow, Length: uint16(size), Seq: seq, SendNanos: send})
	return p
}

// sendAndWait writes datagrams to r and polls run until all are accounted.
func sendAndWait(t *testing.T, r *Receiver, c *control.Client, run uint32, datagrams [][]byte) {
	t.Helper()
	conn, err := net.DialUDP("udp", nil, r.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for _, d := range datagrams {
		if _, err := conn.Write(d); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		res, err := c.Call(control.Request{Op: control.OpPoll, Run: run})
		if err != nil {
			t.Fatal(err)
		}
		if res.Counts.Received+res.Counts.Duplicates+res.Corrupt+res.Stray+res.Warmup == uint64(len(datagrams)) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not all datagrams accounted: %+v", res)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// runLog collects the runs a receiver reports as ended.
type runLog struct {
	mu    sync.Mutex
	ended []control.Result
}

func (l *runLog) add(res control.Result) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ended = append(l.ended, res)
}

func (l *runLog) runs() []control.Result {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.ended)
}

func withClock(res control.Result, clock int64) control.Result {
	res.ClockNanos = clock
	return res
}

func TestAccountingOfCraftedTraffic(t *testing.T) {
	var log runLog
	r := startReceiver(t, Config{OnRunEnd: log.add})
	c, err := control.Dial(r.ControlAddr().String(), 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	const run = 42
	if _, err := c.Call(control.Request{Op: control.OpStart, Run: run}); err != nil {
		t.Fatal(err)
	}
	corrupt := packet(run, 0, 9, 100)
	corrupt[60] ^= 1
	sendAndWait(t, r, c, run, [][]byte{
		packet(payload.WarmupRun, 0, 0, 64),
		packet(run, 0, 0, 64),
		packet(run, 0, 1, 64),
		packet(run, 0, 1, 64), // duplicate
		packet(run, 0, 3, 64), // 2 is late
		packet(run, 0, 2, 64), // reordered, extent 1
		packet(run, 1, 0, 200),
		packet(run+1, 0, 0, 64), // another run: stray
		corrupt,
		[]byte("not loadgen"),
	})
	res, err := c.Call(control.Request{Op: control.OpStop, Run: run})
	if err != nil {
		t.Fatal(err)
	}
	want := struct{ received, dups, reordered, extent, expected, corrupt, stray, warmup, bytes uint64 }{
		received: 5, dups: 1, reordered: 1, extent: 1, expected: 5, corrupt: 2, stray: 1, warmup: 1, bytes: 4*64 + 200,
	}
	got := struct{ received, dups, reordered, extent, expected, corrupt, stray, warmup, bytes uint64 }{
		res.Counts.Received, res.Counts.Duplicates, res.Counts.Reordered, res.Counts.MaxReorderExtent,
		res.Counts.Expected, res.Corrupt, res.Stray, res.Warmup, res.Bytes,
	}
	if got != want {
		t.Errorf("counts %+v, want %+v", got, want)
	}
	if res.Flows != 2 || res.Run != run {
		t.Errorf("run %d with %d flows, want run %d with 2", res.Run, res.Flows, run)
	}
	if res.Latency.P50 <= 0 || res.Latency.Max < res.Latency.P50 || res.Latency.Max > int64(5*time.Second) {
		t.Errorf("latency %+v: want 0 < p50 <= max < 5s", res.Latency)
	}
	if res.LastNanos < res.FirstNanos || res.FirstNanos == 0 {
		t.Errorf("arrival times %d..%d", res.FirstNanos, res.LastNanos)
	}
	if res.LatencyOutOfRange != 0 || res.JitterNanos < 0 || res.Intervals != nil {
		t.Errorf("latency out of range %d, jitter %v, intervals %v: want 0, >= 0, none asked for",
			res.LatencyOutOfRange, res.JitterNanos, res.Intervals)
	}
	// The stop response also carries the receiver's clock reading.
	if ended := log.runs(); len(ended) != 1 || ended[0].ClockNanos != 0 || !reflect.DeepEqual(withClock(ended[0], res.ClockNanos), res) {
		t.Errorf("OnRunEnd saw %+v, want the stopped run %+v once", log.runs(), res)
	}
	if _, err := c.Call(control.Request{Op: control.OpPoll, Run: run + 7}); err == nil || !strings.Contains(err.Error(), "not open") {
		t.Errorf("poll of an unknown run: %v, want a 'not open' error", err)
	}
	if _, err := c.Call(control.Request{Op: "dance", Run: run}); err == nil {
		t.Error("an unknown request succeeded")
	}
}

func TestRunsWithoutControlConnection(t *testing.T) {
	var log runLog
	r := startReceiver(t, Config{OnRunEnd: log.add})
	conn, err := net.DialUDP("udp", nil, r.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// Run 5, then run 6: the new run id closes run 5.
	for _, p := range [][]byte{packet(5, 0, 0, 64), packet(5, 0, 1, 64), packet(6, 0, 0, 64)} {
		if _, err := conn.Write(p); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		res, ok := r.Current()
		if ok && res.Run == 6 && res.Counts.Received == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("run 6 never became current: %+v", res)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if ended := log.runs(); len(ended) != 1 || ended[0].Run != 5 || ended[0].Counts.Received != 2 {
		t.Errorf("ended runs %+v, want run 5 with 2 packets", log.runs())
	}
}

func TestListenErrors(t *testing.T) {
	for _, cfg := range []Config{
		{Listen: "127.0.0.1:0", Batch: 0},
		{Listen: "no-port", Batch: 8},
		{Listen: "127.0.0.1:0", Control: "256.0.0.1:1", Batch: 8},
	} {
		if r, err := Listen(cfg); err == nil {
			r.conn.Close()
			r.ln.Close()
			t.Errorf("Listen(%+v) succeeded", cfg)
		}
	}
}

// TestServeReturnsWithOpenControlConnection stops a receiver while a sender
// still holds its control connection: Serve must not wait for it.
func TestServeReturnsWithOpenControlConnection(t *testing.T) {
	r, err := Listen(Config{Listen: "127.0.0.1:0", Batch: 8})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- r.Serve(ctx) }()
	c, err := control.Dial(r.ControlAddr().String(), 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Call(control.Request{Op: control.OpStart, Run: 1}); err != nil {
		t.Fatal(err)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Serve: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Serve still running 5s after its context ended")
	}
	if _, err := c.Call(control.Request{Op: control.OpPoll, Run: 1}); err == nil {
		t.Error("control connection still answers after Serve returned")
	}
}

// TestAccountingAllocatesNothing checks the per-packet path of the reader,
// with intervals and jitter.
func TestAccountingAllocatesNothing(t *testing.T) {
	r := &Receiver{current: newRun(3, true, false, control.Grid{Interval: 1000, Duration: 100_000})}
	p := packet(3, 0, 0, 1400)
	var seq uint64
	allocs := testing.AllocsPerRun(1000, func() {
		send := int64(seq) * 10
		payload.Encode(p, payload.Header{Run: 3, Length: uint16(len(p)), Seq: seq, SendNanos: send})
		r.accountLocked(p, send+1000+int64(seq%7))
		seq++
	})
	if allocs != 0 {
		t.Errorf("accounting a packet allocates %v times", allocs)
	}
	if got := r.current.resultLocked(withoutIntervals).Counts.Received; got != seq {
		t.Errorf("accounted %d packets, want %d", got, seq)
	}
}

func BenchmarkAccount1400(b *testing.B) {
	r := &Receiver{current: newRun(3, true, false, control.Grid{})}
	p := packet(3, 0, 0, 1400)
	var seq uint64
	b.SetBytes(int64(len(p)))
	b.ReportAllocs()
	for b.Loop() {
		payload.Encode(p, payload.Header{Run: 3, Length: uint16(len(p)), Seq: seq, SendNanos: 1})
		r.accountLocked(p, 1000)
		seq++
	}
}

// TestIntervalsAndForeignClock opens a run with an interval grid and sends
// packets stamped by a sender whose clock is an hour ahead of this host's:
// each packet must count in the interval of its send time, and every
// latency must be out of range.
func TestIntervalsAndForeignClock(t *testing.T) {
	r := startReceiver(t, Config{})
	c, err := control.Dial(r.ControlAddr().String(), 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	const run = 7
	origin := clock.Now() + int64(time.Hour)
	grid := control.Grid{Origin: origin, Interval: 1000, Duration: 3000}
	before := clock.Now()
	started, err := c.Call(control.Request{Op: control.OpStart, Run: run, Grid: grid})
	if err != nil {
		t.Fatal(err)
	}
	if after := clock.Now(); started.ClockNanos < before || started.ClockNanos > after {
		t.Errorf("receiver's clock read %d, outside this host's %d..%d", started.ClockNanos, before, after)
	}
	sendAndWait(t, r, c, run, [][]byte{
		packetSentAt(run, 0, 0, 64, origin+10),    // interval 0
		packetSentAt(run, 0, 1, 64, origin+20),    // interval 0
		packetSentAt(run, 0, 1, 64, origin+20),    // interval 0, duplicate
		packetSentAt(run, 0, 3, 100, origin+1500), // interval 1
		packetSentAt(run, 0, 2, 64, origin+1100),  // interval 1, reordered
		packetSentAt(run, 1, 0, 64, origin+2500),  // interval 2, another flow
		packetSentAt(run, 0, 4, 64, origin+9999),  // past the end: interval 2
	})
	polled, err := c.Call(control.Request{Op: control.OpPoll, Run: run, From: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(polled.Intervals) != 2 || polled.Intervals[0].Received != 2 {
		t.Errorf("poll from interval 1 returned %+v, want intervals 1 and 2", polled.Intervals)
	}
	res, err := c.Call(control.Request{Op: control.OpStop, Run: run})
	if err != nil {
		t.Fatal(err)
	}
	want := []control.Interval{
		{Received: 2, Bytes: 128, Duplicates: 1},
		{Received: 2, Bytes: 164, Reordered: 1},
		{Received: 2, Bytes: 128},
	}
	if len(res.Intervals) != len(want) {
		t.Fatalf("intervals %+v, want %d", res.Intervals, len(want))
	}
	for k, iv := range res.Intervals {
		iv.JitterNanos = 0 // arrival times are not controlled here
		if iv != want[k] {
			t.Errorf("interval %d: %+v, want %+v", k, iv, want[k])
		}
	}
	// The last packet to arrive was interval 2's: its jitter is the run's.
	if res.Intervals[2].JitterNanos != res.JitterNanos {
		t.Errorf("interval 2 jitter %v, run jitter %v: want equal", res.Intervals[2].JitterNanos, res.JitterNanos)
	}
	if res.LatencyOutOfRange != 6 {
		t.Errorf("%d latencies out of range, want all 6 unique packets'", res.LatencyOutOfRange)
	}
	if _, err := c.Call(control.Request{Op: control.OpStart, Run: run + 1, Grid: control.Grid{Interval: 1, Duration: 1 << 40}}); err == nil {
		t.Error("a start request for 2^40 intervals succeeded")
	}
}
