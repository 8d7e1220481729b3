// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

// Package sender generates loadgen traffic: it opens a run on the receiver's
// control connection, sends packets on one UDP socket per flow (distinct
// source ports) for a warm-up and then a measured period, and closes the run
// to collect what the receiver counted.
//
// The measured period starts at an origin on the sender's clock that the
// start request tells the receiver, and is divided into intervals there
// (control.Grid): both ends count each packet in the interval of its send
// time, so that an interval's loss compares like with like. While the run
// goes on, each interval's counts are fetched with a poll once the interval
// has ended and Drain has passed for its last packets to land.
//
// Pipeline of one burst, all on one goroutine locked to its OS thread:
//
//	pace.Pacer.Next -> clock.SleepUntil -> fill headers (one timestamp per
//	burst) into reusable buffers -> udp.BlockingConn.WriteBatch (sendmmsg,
//	optionally GSO) on the next flow's socket, round robin
//
// Buffers are filled with the payload pattern once and afterwards only
// headers are rewritten, so the steady state copies and allocates nothing.
package sender

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wirebatch/wirebatch/loadgen/internal/clock"
	"github.com/wirebatch/wirebatch/loadgen/internal/control"
	"github.com/wirebatch/wirebatch/loadgen/internal/pace"
	"github.com/wirebatch/wirebatch/loadgen/internal/payload"
	"github.com/wirebatch/wirebatch/udp"
)

// Config configures one run.
type Config struct {
	// To is the receiver's UDP address; Control its control address (empty:
	// To's host and port, on TCP).
	To, Control string
	// Rate is packets/s; 0 sends as fast as possible.
	Rate float64
	// Sizes is the repeating schedule of payload sizes (payload.ParseSizes).
	Sizes []int
	// Warmup is sent before Duration, at the same rate, and not accounted.
	// It is timed from the start request, so the request's round trip
	// (microseconds on a LAN) comes out of it.
	Warmup, Duration time.Duration
	// Flows is the number of flows, each its own socket and source port.
	Flows int
	// Batch is the number of messages per sendmmsg.
	Batch int
	// GSOSegments > 1 packs up to that many equal-sized packets into one
	// message with UDP GSO.
	GSOSegments int
	// SocketBuffer is the send buffer to ask for, in bytes.
	SocketBuffer int
	// Drain is how long to wait after the last packet before closing the run,
	// for packets still in flight.
	Drain time.Duration
	// Timeout bounds connecting to the receiver and each control exchange.
	Timeout time.Duration
	// Interval > 0 divides the measured period into intervals of that
	// length (the last one possibly shorter), counted on both ends.
	Interval time.Duration
	// Progress, if set, is called about once a second during the run.
	Progress func(Progress)
	// OnInterval, if set with Interval, is called with each interval in
	// order, Drain after its end; intervals still due when the run ends
	// follow from the receiver's final counts.
	OnInterval func(Interval)
}

// keepAlive is the longest the control connection stays silent during a
// run: a poll this often keeps the receiver from timing it out and notices
// a receiver that went away.
const keepAlive = time.Second

// Progress is a snapshot taken during a run.
type Progress struct {
	Elapsed  time.Duration
	Sent     uint64
	Receiver control.Result
}

// Interval is one interval of a run: what was sent in it and what the
// receiver counted of those packets.
type Interval struct {
	// Start and End are the interval's bounds after the origin.
	Start, End time.Duration
	// Sent and Bytes count the packets stamped in the interval and their
	// payload bytes.
	Sent, Bytes uint64
	Receiver    control.Interval
}

// Result is one run's outcome.
type Result struct {
	// Sent and Bytes count measured packets and their payload bytes.
	Sent, Bytes uint64
	// StartNanos and EndNanos bound the measured sending, CLOCK_MONOTONIC.
	// The sending starts at the origin of the intervals or, without a
	// warm-up, a control round trip after it.
	StartNanos, EndNanos int64
	// CPUNanos is this process's CPU time during the run (getrusage).
	CPUNanos int64
	// Receiver is what the receiver counted.
	Receiver control.Result
	// Intervals are the run's intervals, when Config.Interval asked for them.
	Intervals []Interval
	// SameClock says whether the receiver's CLOCK_MONOTONIC reading in its
	// answer to the start request lay between this host's readings before
	// the request and after the answer, as it must for one clock: true on
	// one host, and between two hosts only if their clocks happen to agree
	// within that round trip. One-way latency means something only then. ClockOffset estimates the receiver's clock
	// minus the sender's, give or take half the round trip.
	SameClock   bool
	ClockOffset time.Duration
}

// Validate checks cfg for values that cannot work.
func (cfg *Config) Validate() error {
	switch {
	case cfg.Rate < 0:
		return fmt.Errorf("rate %v: want packets per second > 0, or max", cfg.Rate)
	case len(cfg.Sizes) == 0:
		return errors.New("no packet sizes")
	case cfg.Duration <= 0:
		return fmt.Errorf("duration %v: want > 0", cfg.Duration)
	case cfg.Warmup < 0:
		return fmt.Errorf("warm-up %v: want >= 0", cfg.Warmup)
	case cfg.Flows < 1 || cfg.Flows > 1<<16:
		return fmt.Errorf("flows %d: want 1 to 65536", cfg.Flows)
	case cfg.Batch < 1 || cfg.Batch > 1024:
		return fmt.Errorf("batch %d: want 1 to 1024", cfg.Batch)
	case cfg.GSOSegments < 0 || cfg.GSOSegments > udp.MaxGSOSegments:
		return fmt.Errorf("gso %d: want 0 (off) to %d segments", cfg.GSOSegments, udp.MaxGSOSegments)
	case cfg.Timeout <= 0:
		return fmt.Errorf("timeout %v: want > 0", cfg.Timeout)
	case cfg.Interval < 0:
		return fmt.Errorf("interval %v: want >= 0", cfg.Interval)
	}
	if err := cfg.grid(0).Check(); err != nil {
		return err
	}
	for _, s := range cfg.Sizes {
		if s < payload.HeaderSize || s > payload.MaxSize {
			return fmt.Errorf("size %d: payloads must be %d to %d bytes", s, payload.HeaderSize, payload.MaxSize)
		}
	}
	return nil
}

// Session is a control connection to one receiver, reused across runs (a
// sweep runs many).
type Session struct {
	client *control.Client
}

// Connect dials the receiver's control address.
func Connect(cfg Config) (*Session, error) {
	addr := cfg.Control
	if addr == "" {
		addr = cfg.To
	}
	c, err := control.Dial(addr, cfg.Timeout)
	if err != nil {
		return nil, err
	}
	return &Session{client: c}, nil
}

// Close closes the control connection.
func (s *Session) Close() error { return s.client.Close() }

// Run sends one run with a fresh connection to the receiver.
func Run(ctx context.Context, cfg Config) (Result, error) {
	if err := cfg.Validate(); err != nil {
		return Result{}, err
	}
	s, err := Connect(cfg)
	if err != nil {
		return Result{}, err
	}
	defer s.Close()
	return s.Run(ctx, cfg)
}

// Run sends one run on the session. Cancelling ctx ends the sending early;
// the run is still closed and reported.
func (s *Session) Run(ctx context.Context, cfg Config) (Result, error) {
	if err := cfg.Validate(); err != nil {
		return Result{}, err
	}
	flows, err := openFlows(cfg)
	if err != nil {
		return Result{}, err
	}
	defer func() {
		for _, f := range flows {
			f.Close()
		}
	}()

	var res Result
	runID := rand.Uint32N(1<<32-1) + 1 // any id but payload.WarmupRun
	// The origin is fixed before the start request so that the receiver
	// knows the grid before the first measured packet; the warm-up (if
	// any) fills the time until then.
	before := clock.Now()
	origin := before + cfg.Warmup.Nanoseconds()
	grid := cfg.grid(origin)
	started, err := s.client.Call(control.Request{Op: control.OpStart, Run: runID, Grid: grid})
	if err != nil {
		return Result{}, err
	}
	after := clock.Now()
	res.SameClock = before <= started.ClockNanos && started.ClockNanos <= after
	res.ClockOffset = time.Duration(started.ClockNanos - (before + (after-before)/2))

	g := newGenerator(cfg, flows, grid)
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var wg sync.WaitGroup
	progressDone := make(chan struct{})
	reported := 0 // intervals passed to cfg.OnInterval
	wg.Go(func() { s.poll(ctx, cancel, runID, g, cfg, progressDone, &reported) })

	var sendErr error
	cpuStart := clock.ProcessCPU()
	// The sending loop runs on its own thread: it sleeps in clock_nanosleep
	// with a lowered timer slack, both per-thread. Exiting without
	// UnlockOSThread retires the thread with its changed slack.
	sendDone := make(chan struct{})
	go func() {
		defer close(sendDone)
		runtime.LockOSThread()
		clock.LowerTimerSlack(time.Microsecond) // best effort: only precision suffers
		if now := clock.Now(); now < origin {
			if sendErr = g.send(ctx, payload.WarmupRun, now, origin); sendErr != nil {
				return
			}
		}
		g.resetCounts()
		// The warm-up ends when its next burst would be due at the origin
		// or later, which may be before the origin.
		res.StartNanos = max(clock.Now(), origin)
		clock.SleepUntil(res.StartNanos)
		sendErr = g.send(ctx, runID, res.StartNanos, origin+cfg.Duration.Nanoseconds())
		res.EndNanos = clock.Now()
	}()
	<-sendDone
	res.Sent, res.Bytes = g.sent.Load(), g.bytes.Load()

	// Let packets in flight land before the receiver closes the run.
	select {
	case <-time.After(cfg.Drain):
	case <-ctx.Done():
	}
	close(progressDone)
	wg.Wait()
	if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.Canceled) {
		return Result{}, cause // the control connection was lost
	}
	if sendErr != nil {
		return Result{}, sendErr
	}
	res.Receiver, err = s.client.Call(control.Request{Op: control.OpStop, Run: runID})
	if err != nil {
		return Result{}, err
	}
	res.CPUNanos = clock.ProcessCPU() - cpuStart
	for k := range grid.Count() {
		var counted control.Interval
		if k < len(res.Receiver.Intervals) {
			counted = res.Receiver.Intervals[k]
		}
		res.Intervals = append(res.Intervals, g.interval(k, counted))
	}
	if cfg.OnInterval != nil {
		for _, iv := range res.Intervals[reported:] {
			cfg.OnInterval(iv)
		}
	}
	return res, nil
}

// grid returns the intervals of a run whose measured period starts at
// origin; the zero Grid when cfg asks for none.
func (cfg *Config) grid(origin int64) control.Grid {
	if cfg.Interval <= 0 {
		return control.Grid{}
	}
	return control.Grid{Origin: origin, Interval: cfg.Interval.Nanoseconds(), Duration: cfg.Duration.Nanoseconds()}
}

// poll asks the receiver for its counts every keepAlive and, with
// cfg.OnInterval, when an interval is due: Drain after its end, when its
// packets have landed. It reports the due intervals in order, counting them
// in *reported, until done is closed. Besides feeding progress and
// intervals, polling keeps the control connection from going idle and
// notices a receiver that went away, cancelling the run with the error.
func (s *Session) poll(ctx context.Context, cancel context.CancelCauseFunc, runID uint32, g *generator, cfg Config, done <-chan struct{}, reported *int) {
	start := time.Now()
	intervals := 0
	if cfg.OnInterval != nil {
		intervals = g.grid.Count()
	}
	due := func(k int) int64 {
		_, end := g.grid.Bounds(k)
		return g.grid.Origin + end + cfg.Drain.Nanoseconds()
	}
	timer := time.NewTimer(keepAlive)
	defer timer.Stop()
	withheld := false // the receiver did not return an interval that was due
	for {
		wait := keepAlive
		if *reported < intervals && !withheld {
			wait = min(wait, time.Duration(max(due(*reported)-clock.Now(), 0)))
		}
		timer.Reset(wait)
		select {
		case <-done:
			return
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		r, err := s.client.Call(control.Request{Op: control.OpPoll, Run: runID, From: *reported})
		if err != nil {
			cancel(err)
			return
		}
		if cfg.Progress != nil {
			cfg.Progress(Progress{Elapsed: time.Since(start), Sent: g.sent.Load(), Receiver: r})
		}
		now := clock.Now()
		i := 0
		for ; *reported < intervals && i < len(r.Intervals) && due(*reported) <= now; i++ {
			cfg.OnInterval(g.interval(*reported, r.Intervals[i]))
			*reported++
		}
		// Polling again at once would not help a receiver that withholds
		// intervals; the final counts will have them.
		withheld = *reported < intervals && due(*reported) <= now && i == len(r.Intervals)
	}
}

func openFlows(cfg Config) ([]*udp.BlockingConn, error) {
	to, err := net.ResolveUDPAddr("udp", cfg.To)
	if err != nil {
		return nil, fmt.Errorf("receiver address: %w", err)
	}
	var flows []*udp.BlockingConn
	fail := func(err error) ([]*udp.BlockingConn, error) {
		for _, f := range flows {
			f.Close()
		}
		return nil, err
	}
	for range cfg.Flows {
		// A connected socket per flow: its own source port, and sendmmsg
		// needs no destination per message.
		c, err := udp.DialBlocking(to.AddrPort())
		if err != nil {
			return fail(err)
		}
		flows = append(flows, c)
		if cfg.SocketBuffer > 0 {
			if err := c.SetBuffers(cfg.SocketBuffer); err != nil {
				return fail(fmt.Errorf("socket buffers: %w", err))
			}
		}
		if cfg.GSOSegments > 1 {
			if err := c.CheckGSO(); err != nil {
				return fail(fmt.Errorf("-gso: %w", err))
			}
		}
	}
	return flows, nil
}

// generator owns the sending buffers and sequence numbers of a run.
type generator struct {
	cfg      Config
	grid     control.Grid
	flows    []*udp.BlockingConn
	nextFlow int
	seqs     []uint64 // next sequence number per flow
	packets  uint64   // packets built so far, to walk cfg.Sizes
	segments int      // packets per message, at most
	ms       []udp.Message
	bufs     [][]byte    // backing store of ms[i]
	iovs     [][1][]byte // the buffer of ms[i], its one iovec
	// filledSize and filledSegments say which segment layout of bufs[i]
	// already holds the payload pattern.
	filledSize     []int
	filledSegments []int
	// sent and bytes count packets the kernel accepted; read by the poller.
	sent, bytes atomic.Uint64
	// intervals count the measured packets per interval of grid, by their
	// send stamps; read by the poller.
	intervals []sentCounts
}

// sentCounts are the packets and payload bytes sent in one interval.
type sentCounts struct {
	packets, bytes atomic.Uint64
}

func newGenerator(cfg Config, flows []*udp.BlockingConn, grid control.Grid) *generator {
	g := &generator{
		cfg: cfg, grid: grid, flows: flows, seqs: make([]uint64, len(flows)), segments: max(1, cfg.GSOSegments),
		intervals: make([]sentCounts, grid.Count()),
	}
	bufSize := 0
	for _, s := range cfg.Sizes {
		bufSize = max(bufSize, s)
	}
	if g.segments > 1 {
		bufSize = max(bufSize, udp.MaxGSOBytes)
	}
	g.ms = make([]udp.Message, cfg.Batch)
	g.bufs = make([][]byte, cfg.Batch)
	g.iovs = make([][1][]byte, cfg.Batch)
	g.filledSize = make([]int, cfg.Batch)
	g.filledSegments = make([]int, cfg.Batch)
	for i := range g.bufs {
		g.bufs[i] = make([]byte, bufSize)
		g.ms[i].Buffers = g.iovs[i][:]
	}
	return g
}

// resetCounts starts the measured period: counters and sequence numbers
// begin again at 0.
func (g *generator) resetCounts() {
	g.sent.Store(0)
	g.bytes.Store(0)
	clear(g.seqs)
}

// send sends packets of run from start until end (CLOCK_MONOTONIC) or until
// ctx is done, paced when cfg.Rate > 0.
func (g *generator) send(ctx context.Context, run uint32, start, end int64) error {
	maxBurst := g.cfg.Batch * g.segments
	var pacer *pace.Pacer
	burst := maxBurst
	if g.cfg.Rate > 0 {
		pacer = pace.New(g.cfg.Rate, maxBurst, start)
		burst = pacer.Burst()
	}
	for now := start; ; now = clock.Now() {
		if pacer != nil {
			due := pacer.Next(now)
			if due >= end {
				return nil
			}
			if due > now {
				clock.SleepUntil(due)
			}
		} else if now >= end {
			return nil
		}
		if ctx.Err() != nil {
			return nil
		}
		if err := g.sendBurst(run, burst); err != nil {
			return err
		}
	}
}

// sendBurst sends n packets of run on the next flow.
func (g *generator) sendBurst(run uint32, n int) error {
	flowIndex := g.nextFlow
	g.nextFlow = (g.nextFlow + 1) % len(g.flows)
	conn := g.flows[flowIndex]
	stamp := clock.Now()
	for n > 0 {
		msgs, packets, bytes := g.build(run, uint16(flowIndex), n, stamp)
		if err := conn.WriteBatch(g.ms[:msgs]); err != nil {
			if errors.Is(err, unix.ECONNREFUSED) {
				return fmt.Errorf("sending to %s: receiver's UDP port unreachable: %w", g.cfg.To, err)
			}
			if errors.Is(err, unix.EINVAL) && g.segments > 1 {
				return fmt.Errorf("sending to %s with GSO (segments must fit the path MTU unfragmented): %w", g.cfg.To, err)
			}
			return fmt.Errorf("sending to %s: %w", g.cfg.To, err)
		}
		g.sent.Add(uint64(packets))
		g.bytes.Add(uint64(bytes))
		if run != payload.WarmupRun && len(g.intervals) > 0 {
			counts := &g.intervals[g.grid.Index(stamp)]
			counts.packets.Add(uint64(packets))
			counts.bytes.Add(uint64(bytes))
		}
		n -= packets
	}
	return nil
}

// interval returns interval k with the receiver's counts of it.
func (g *generator) interval(k int, counted control.Interval) Interval {
	start, end := g.grid.Bounds(k)
	return Interval{
		Start: time.Duration(start), End: time.Duration(end),
		Sent: g.intervals[k].packets.Load(), Bytes: g.intervals[k].bytes.Load(),
		Receiver: counted,
	}
}

// build lays out up to n packets of one flow in the message slots, grouping
// runs of equal sizes into GSO messages, and returns how many messages,
// packets and payload bytes it prepared.
func (g *generator) build(run uint32, flowIndex uint16, n int, stamp int64) (msgs, packets, bytes int) {
	for msgs < len(g.ms) && packets < n {
		size := g.cfg.Sizes[g.packets%uint64(len(g.cfg.Sizes))]
		segs := 1
		// Extend the message while the next packets have the same size.
		for segs < g.segments && packets+segs < n && (segs+1)*size <= udp.MaxGSOBytes &&
			g.cfg.Sizes[(g.packets+uint64(segs))%uint64(len(g.cfg.Sizes))] == size {
			segs++
		}
		buf := g.bufs[msgs][:segs*size]
		g.fill(msgs, size, segs)
		for i := range segs {
			payload.Encode(buf[i*size:], payload.Header{
				Run: run, Flow: flowIndex, Length: uint16(size),
				Seq: g.seqs[flowIndex], SendNanos: stamp,
			})
			g.seqs[flowIndex]++
		}
		m := &g.ms[msgs]
		g.iovs[msgs][0] = buf
		m.Segment = 0
		if segs > 1 {
			m.Segment = size
		}
		g.packets += uint64(segs)
		packets += segs
		bytes += segs * size
		msgs++
	}
	return msgs, packets, bytes
}

// fill makes sure the first segs segments of size bytes in bufs[slot] hold
// the payload pattern, copying only what an earlier fill did not.
func (g *generator) fill(slot, size, segs int) {
	from := 0
	if g.filledSize[slot] == size {
		from = g.filledSegments[slot]
	}
	for i := from; i < segs; i++ {
		payload.Fill(g.bufs[slot][i*size : (i+1)*size])
	}
	if from < segs {
		g.filledSize[slot], g.filledSegments[slot] = size, segs
	}
}
