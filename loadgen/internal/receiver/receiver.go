// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

// Package receiver counts and checks loadgen traffic: it reads datagrams in
// batches (recvmmsg, and UDP GRO where the kernel has it), verifies each
// payload, tracks every flow's sequence numbers (package flow) and
// interarrival jitter (package jitter), records one-way latency in an
// HdrHistogram, counts per sending interval when the sender asks for it, and
// answers a sender's control requests on a TCP socket.
//
// One goroutine reads and accounts; control goroutines read the accounting.
// Both hold Receiver.mu, the reader once per batch, so the lock is taken a
// few thousand times a second, not per packet.
//
// Runs: a sender opens a run over the control connection, and only packets
// of that run are accounted to it. Without a control connection (traffic from
// something other than loadgen send) the first run id seen opens a run
// implicitly, and a new run id closes it and opens the next.
package receiver

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"slices"
	"sync"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"golang.org/x/sys/unix"

	"github.com/wirebatch/wirebatch/loadgen/internal/clock"
	"github.com/wirebatch/wirebatch/loadgen/internal/control"
	"github.com/wirebatch/wirebatch/loadgen/internal/flow"
	"github.com/wirebatch/wirebatch/loadgen/internal/jitter"
	"github.com/wirebatch/wirebatch/loadgen/internal/payload"
	"github.com/wirebatch/wirebatch/udp"
)

// Latencies are recorded in nanoseconds from 1ns to maxLatency with three
// significant digits (0.1% resolution at every magnitude).
const (
	maxLatency        = int64(time.Minute)
	latencySigFigures = 3
)

// controlIdle is how long a control connection may stay silent.
const controlIdle = 30 * time.Second

// readTimeout bounds how long the reader blocks without traffic, and so how
// long Serve takes to notice that it should stop.
const readTimeout = 100 * time.Millisecond

// pollFor is how long the reader keeps polling an empty socket before it
// blocks. A reader that sleeps must be woken per arriving batch, and the
// scheduler then tends to run it on the sender's CPU (wake-affine), where
// the sender yields to it inside sendmmsg, which slows a small-packet sender
// down. Polling through short gaps keeps the reader on its own CPU under
// load, and costs at most pollFor of CPU per gap when traffic is sparse.
const pollFor = 50 * time.Microsecond

// Config configures a Receiver.
type Config struct {
	// Listen is the UDP address to receive on.
	Listen string
	// Control is the TCP address for control connections; empty means
	// Listen's address, on TCP.
	Control string
	// Batch is how many messages one recvmmsg may return.
	Batch int
	// GRO asks the kernel to coalesce datagrams (if it can).
	GRO bool
	// SocketBuffer is the receive buffer to ask for, in bytes.
	SocketBuffer int
	// OnRunEnd, if set, is called (on the reading or a control goroutine)
	// with the final result of every run that ends.
	OnRunEnd func(control.Result)
}

// Receiver is a listening receiver; see the package comment.
type Receiver struct {
	cfg     Config
	conn    *udp.BlockingConn
	addr    *net.UDPAddr
	ln      net.Listener
	gro     bool
	mu      sync.Mutex
	current *run // nil before the first run
}

// run is the accounting of one run, guarded by Receiver.mu.
type run struct {
	id         uint32
	controlled bool // opened by a sender's start request
	stopped    bool // closed by a stop request; its packets are now stray
	flows      []*flowState
	latency    *hdrhistogram.Histogram
	// result holds the fields other than Counts, Flows, Latency,
	// JitterNanos and Intervals, which resultLocked fills in.
	result   control.Result
	cpuStart int64
	// grid and intervals count packets per sending interval; intervals is
	// empty when the sender asked for none.
	grid      control.Grid
	intervals []control.Interval
	// jitterSum is the sum of the flows' jitter estimates, over the
	// jitterFlows flows that have one, kept up to date packet by packet so
	// that the mean is at hand for every interval.
	jitterSum   float64
	jitterFlows int
}

// flowState is the accounting of one flow of a run.
type flowState struct {
	seqs   flow.Tracker
	jitter jitter.Estimator
}

// newRun opens a run; grid must have passed Check.
func newRun(id uint32, controlled, gro bool, grid control.Grid) *run {
	now := clock.Now()
	return &run{
		id:         id,
		controlled: controlled,
		latency:    hdrhistogram.New(1, maxLatency, latencySigFigures),
		result:     control.Result{Run: id, GRO: gro, StartNanos: now},
		cpuStart:   clock.ProcessCPU(),
		grid:       grid,
		intervals:  make([]control.Interval, grid.Count()),
	}
}

// jitter is the mean of the flows' jitter estimates, in nanoseconds.
func (rn *run) jitter() float64 {
	if rn.jitterFlows == 0 {
		return 0
	}
	// Updating the sum by differences may leave rounding residue below 0.
	return max(rn.jitterSum/float64(rn.jitterFlows), 0)
}

// Listen opens the UDP socket and the control listener.
func Listen(cfg Config) (*Receiver, error) {
	if cfg.Batch < 1 {
		return nil, fmt.Errorf("batch %d: want at least 1", cfg.Batch)
	}
	addr, err := net.ResolveUDPAddr("udp", cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("listen address: %w", err)
	}
	// With port 0 the kernel picks a free UDP port, which may be taken on
	// TCP; the control listener shares it, so try a few ports.
	attempts := 1
	if addr.Port == 0 && cfg.Control == "" {
		attempts = 10
	}
	for {
		conn, err := udp.ListenBlocking(addr.AddrPort())
		if err != nil {
			return nil, err
		}
		r := &Receiver{cfg: cfg, conn: conn}
		err = r.setup()
		if err == nil {
			return r, nil
		}
		conn.Close()
		if attempts--; attempts == 0 || !errors.Is(err, unix.EADDRINUSE) {
			return nil, err
		}
	}
}

func (r *Receiver) setup() error {
	var err error
	r.addr = net.UDPAddrFromAddrPort(r.conn.LocalAddr())
	if err := r.conn.SetReadTimeout(readTimeout); err != nil {
		return err
	}
	if r.cfg.SocketBuffer > 0 {
		if err := r.conn.SetBuffers(r.cfg.SocketBuffer); err != nil {
			return fmt.Errorf("socket buffers: %w", err)
		}
	}
	// GRO is an optimisation: a kernel without it still delivers every datagram.
	r.gro = r.cfg.GRO && r.conn.EnableGRO() == nil
	controlAddr := r.cfg.Control
	if controlAddr == "" {
		// Same host and port as the UDP socket actually bound (port 0 resolved).
		controlAddr = r.addr.String()
	}
	if r.ln, err = net.Listen("tcp", controlAddr); err != nil {
		return fmt.Errorf("control listener: %w", err)
	}
	return nil
}

// Addr is the UDP address the receiver reads from.
func (r *Receiver) Addr() *net.UDPAddr { return r.addr }

// ControlAddr is the TCP address of the control listener.
func (r *Receiver) ControlAddr() net.Addr { return r.ln.Addr() }

// GRO reports whether the kernel coalesces datagrams for this receiver.
func (r *Receiver) GRO() bool { return r.gro }

// Serve reads and answers control connections until ctx is done (noticed
// within readTimeout), then closes the sockets, including open control
// connections, and ends the current run. It returns the first I/O error,
// or nil when ctx ended it.
func (r *Receiver) Serve(ctx context.Context) error {
	readCtx, stopControl := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { r.acceptControl(readCtx) })
	err := r.read(readCtx)
	stopControl()
	r.conn.Close()
	r.ln.Close()
	wg.Wait()
	r.mu.Lock()
	if r.current != nil && !r.current.stopped {
		r.endLocked()
	}
	r.mu.Unlock()
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// acceptControl serves control connections until the listener is closed;
// when ctx is done it closes the open ones too, so Serve does not wait for
// senders to hang up.
func (r *Receiver) acceptControl(ctx context.Context) {
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		conn, err := r.ln.Accept()
		if err != nil {
			return // listener closed by Serve
		}
		stop := context.AfterFunc(ctx, func() { conn.Close() })
		wg.Go(func() {
			defer stop()
			control.Serve(conn, controlIdle, r.handle)
		})
	}
}

func (r *Receiver) handle(req control.Request) (control.Result, error) {
	res, err := r.answer(req)
	// The sender checks that this reading lies between its own before the
	// request and after the response, which holds only for one clock.
	res.ClockNanos = clock.Now()
	return res, err
}

func (r *Receiver) answer(req control.Request) (control.Result, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch req.Op {
	case control.OpStart:
		if err := req.Grid.Check(); err != nil {
			return control.Result{}, err
		}
		if r.current != nil && !r.current.stopped {
			r.endLocked()
		}
		r.current = newRun(req.Run, true, r.gro, req.Grid)
		return r.current.resultLocked(withoutIntervals), nil
	case control.OpPoll, control.OpStop:
		if r.current == nil || r.current.id != req.Run {
			return control.Result{}, fmt.Errorf("run %d is not open here (another sender took over?)", req.Run)
		}
		if req.Op == control.OpStop {
			if !r.current.stopped {
				return r.endLocked(), nil
			}
			return r.current.resultLocked(0), nil
		}
		return r.current.resultLocked(req.From), nil
	}
	return control.Result{}, fmt.Errorf("unknown request %q", req.Op)
}

// Current returns the counts of the current or last run; ok is false
// before the first run.
func (r *Receiver) Current() (result control.Result, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.current == nil {
		return control.Result{}, false
	}
	return r.current.resultLocked(withoutIntervals), true
}

// endLocked marks the current run stopped, reports it, and returns its
// final result.
func (r *Receiver) endLocked() control.Result {
	result := r.current.resultLocked(0)
	r.current.result.CPUNanos = result.CPUNanos // frozen from now on
	r.current.stopped = true
	if r.cfg.OnRunEnd != nil {
		r.cfg.OnRunEnd(result)
	}
	return result
}

// withoutIntervals, as resultLocked's from, leaves the intervals out.
const withoutIntervals = math.MaxInt

// resultLocked returns the run's counts so far, with its intervals from
// index from on.
func (rn *run) resultLocked(from int) control.Result {
	res := rn.result
	for _, f := range rn.flows {
		if f != nil {
			res.Counts.Add(f.seqs.Counts())
			res.Flows++
		}
	}
	res.JitterNanos = rn.jitter()
	if from = max(from, 0); from < len(rn.intervals) {
		res.Intervals = slices.Clone(rn.intervals[from:])
	}
	h := rn.latency
	res.Latency = control.Latency{
		P50:  h.ValueAtQuantile(50),
		P90:  h.ValueAtQuantile(90),
		P99:  h.ValueAtQuantile(99),
		P999: h.ValueAtQuantile(99.9),
		Max:  h.Max(),
	}
	if !rn.stopped {
		res.CPUNanos = clock.ProcessCPU() - rn.cpuStart
	}
	return res
}

// read is the receive loop: one recvmmsg per batch, accounting under one
// lock hold per batch, until ctx is done.
func (r *Receiver) read(ctx context.Context) error {
	ms := make([]udp.Message, r.cfg.Batch)
	for i := range ms {
		// 64 KiB holds the largest datagram and the largest GRO message.
		ms[i].Buffers = [][]byte{make([]byte, 1<<16)}
	}
	var idleSince time.Time
	for ctx.Err() == nil {
		n, err := r.conn.TryReadBatch(ms)
		if n == 0 && err == nil {
			if idleSince.IsZero() {
				idleSince = time.Now()
			}
			if time.Since(idleSince) < pollFor {
				continue
			}
			n, err = r.conn.ReadBatch(ms)
		}
		if errors.Is(err, udp.ErrTimeout) {
			continue
		}
		if err != nil {
			return err
		}
		idleSince = time.Time{}
		now := clock.Now()
		r.mu.Lock()
		for _, m := range ms[:n] {
			data := m.Buffers[0][:m.N]
			size := m.Segment
			if size <= 0 {
				size = len(data)
			}
			for len(data) > 0 {
				seg := data[:min(size, len(data))]
				r.accountLocked(seg, now)
				data = data[len(seg):]
			}
		}
		r.mu.Unlock()
	}
	return nil
}

// accountLocked accounts one datagram that arrived at now.
func (r *Receiver) accountLocked(p []byte, now int64) {
	h, err := payload.Decode(p)
	rn := r.current
	switch {
	case err != nil:
		// A corrupt payload's run id can not be trusted; it is charged to
		// the current run, which is what a sender is measuring.
		if rn == nil {
			rn = newRun(payload.WarmupRun, false, r.gro, control.Grid{})
			r.current = rn
		}
		rn.result.Corrupt++
		return
	case h.Run == payload.WarmupRun:
		if rn != nil {
			rn.result.Warmup++
		}
		return
	case rn == nil || (rn.id != h.Run && (rn.stopped || !rn.controlled)):
		if rn != nil && !rn.stopped {
			r.endLocked()
		}
		rn = newRun(h.Run, false, r.gro, control.Grid{})
		r.current = rn
	case rn.id != h.Run || rn.stopped:
		rn.result.Stray++
		return
	}
	if int(h.Flow) >= len(rn.flows) {
		rn.flows = append(rn.flows, make([]*flowState, int(h.Flow)+1-len(rn.flows))...)
	}
	f := rn.flows[h.Flow]
	if f == nil {
		f = new(flowState)
		rn.flows[h.Flow] = f
	}
	var interval *control.Interval
	if len(rn.intervals) > 0 {
		interval = &rn.intervals[rn.grid.Index(h.SendNanos)]
	}
	before := f.seqs.Counts()
	f.seqs.Observe(h.Seq)
	after := f.seqs.Counts()
	if after.Received == before.Received {
		// A duplicate: counted by the tracker, not measured again.
		if interval != nil {
			interval.Duplicates++
		}
		return
	}
	if rn.result.FirstNanos == 0 {
		rn.result.FirstNanos = now
	}
	rn.result.LastNanos = now
	rn.result.Bytes += uint64(len(p))

	hadJitter, oldJitter := f.jitter.Estimated(), f.jitter.Jitter()
	f.jitter.Observe(h.SendNanos, now)
	if f.jitter.Estimated() {
		if !hadJitter {
			rn.jitterFlows++
		}
		rn.jitterSum += f.jitter.Jitter() - oldJitter
	}
	if interval != nil {
		interval.Received++
		interval.Bytes += uint64(len(p))
		interval.Reordered += after.Reordered - before.Reordered
		interval.JitterNanos = rn.jitter()
	}

	// A negative latency, or one beyond the histogram's range, comes from a
	// sender whose CLOCK_MONOTONIC is not this host's: it is counted, so
	// that reports can say the latency figures are invalid, and recorded at
	// the nearest end of the range.
	latency := now - h.SendNanos
	if latency < 0 || latency > maxLatency {
		rn.result.LatencyOutOfRange++
	}
	rn.latency.RecordValue(min(max(latency, 1), maxLatency))
}
