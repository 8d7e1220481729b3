// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/wirebatch/wirebatch/loadgen/internal/clock"
	"github.com/wirebatch/wirebatch/loadgen/internal/control"
	"github.com/wirebatch/wirebatch/loadgen/internal/receiver"
	"github.com/wirebatch/wirebatch/loadgen/internal/report"
)

func runRecv(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("recv", "-listen ADDR:PORT [-duration D] [-interval D] [-json] [flags]")
	listen := fs.String("listen", "", "UDP `ADDR:PORT` to receive on")
	controlAddr := fs.String("control", "", "control `ADDR:PORT` (TCP; default: -listen)")
	duration := fs.Duration("duration", 0, "stop after this long (default: until interrupted)")
	interval := fs.Duration("interval", defaultInterval, "print what arrived every `D` while a run receives (text output); 0 for no lines")
	batch := fs.Int("batch", defaultBatch, "messages per recvmmsg")
	gro := fs.Bool("gro", true, "let the kernel coalesce datagrams (UDP GRO)")
	sockBuf := fs.Int("sockbuf", defaultSocketBuffer, "socket buffer `bytes`")
	jsonOut := fs.Bool("json", false, "print each run's counts as JSON")
	quiet := fs.Bool("quiet", false, "no progress display on stderr")
	if err := parseArgs(fs, args, stdout, stderr); err != nil {
		return err
	}
	if *listen == "" {
		return fmt.Errorf("-listen ADDR:PORT is required")
	}
	if *duration < 0 {
		return fmt.Errorf("-duration %v: must not be negative", *duration)
	}
	if *interval < 0 {
		return fmt.Errorf("-interval %v: must not be negative (0 for no lines)", *interval)
	}
	intervalLines := !*jsonOut && *interval > 0
	// The one-line progress display stands in for interval lines.
	progress := progressWriter(stderr, *quiet || intervalLines)
	var outMu sync.Mutex // runs end on the reading and control goroutines
	var watch *receiverWatch
	switch {
	case intervalLines:
		watch = &receiverWatch{mu: &outMu, period: *interval, show: func(line string) { fmt.Fprintln(stdout, line) }}
	case progress != nil:
		watch = &receiverWatch{mu: &outMu, period: time.Second, show: func(line string) { fmt.Fprintf(progress, "\r\033[K%s", line) }}
	}
	r, err := receiver.Listen(receiver.Config{
		Listen: *listen, Control: *controlAddr, Batch: *batch, GRO: *gro, SocketBuffer: *sockBuf,
		OnRunEnd: func(res control.Result) {
			outMu.Lock()
			defer outMu.Unlock()
			if watch != nil {
				watch.endLocked(res)
			}
			if progress != nil {
				fmt.Fprint(progress, "\r\033[K") // the report replaces the progress line
			}
			if res.LatencyOutOfRange > 0 {
				fmt.Fprintf(stderr, "loadgen: warning: run %d: %d packets arrived before they were sent or over a minute later "+
					"by this host's clock: the sender's clock is another one, and one-way latency can not be measured\n",
					res.Run, res.LatencyOutOfRange)
			}
			if *jsonOut {
				json.NewEncoder(stdout).Encode(res)
				return
			}
			writeRunText(stdout, res)
		},
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "loadgen: receiving on udp %s, control on tcp %s, gro %v\n", r.Addr(), r.ControlAddr(), r.GRO())
	if *duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, *duration)
		defer cancel()
	}
	if watch != nil {
		go watch.run(ctx, r)
	}
	return r.Serve(ctx)
}

// writeRunText prints a receiver's view of one run.
func writeRunText(w io.Writer, res control.Result) {
	c := res.Counts
	rate := 0.0
	if span := time.Duration(res.LastNanos - res.FirstNanos).Seconds(); span > 0 && c.Received > 1 {
		rate = float64(c.Received-1) / span
	}
	fmt.Fprintf(w, "run %d: received %d from %d flow(s) at %.0f packets/s, missing %d, duplicates %d, reordered %d (max extent %d), corrupt %d, stray %d, warm-up %d\n",
		res.Run, c.Received, res.Flows, rate, c.Missing(), c.Duplicates, c.Reordered, c.MaxReorderExtent, res.Corrupt, res.Stray, res.Warmup)
	l := res.Latency
	validity := ""
	if res.LatencyOutOfRange > 0 {
		validity = " (not valid: the sender's clock is another one)"
	}
	fmt.Fprintf(w, "  jitter %.1f µs; latency µs p50 %.1f  p90 %.1f  p99 %.1f  p99.9 %.1f  max %.1f%s; cpu %.2fs\n",
		res.JitterNanos/1e3, float64(l.P50)/1e3, float64(l.P90)/1e3, float64(l.P99)/1e3, float64(l.P999)/1e3, float64(l.Max)/1e3,
		validity, time.Duration(res.CPUNanos).Seconds())
}

// receiverWatch shows what arrived in each period of a run, as iperf3's
// server does: at every whole period after the run opened, and for the
// last, partial period when it ends. A period in which nothing arrived
// shows no line. These are periods of arrival on the receiver's clock; the
// sender's intervals, by send time, are the ones that account loss
// exactly.
type receiverWatch struct {
	period time.Duration
	show   func(string)
	// mu guards the fields below and show's output; the run-end report
	// holds it too.
	mu     *sync.Mutex
	last   control.Result // the run as of lastAt (CLOCK_MONOTONIC)
	lastAt int64
	ended  bool // last is its run's final result
}

// run shows periods of r's runs until ctx ends.
func (w *receiverWatch) run(ctx context.Context, r *receiver.Receiver) {
	timer := time.NewTimer(w.period)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		wait := w.period
		if res, ok := r.Current(); ok {
			wait = w.tick(res, clock.Now())
		}
		timer.Reset(wait)
	}
}

// tick shows the period that ended last before now, if not yet shown, of
// res, the current run as of now, and returns the time until the next one
// ends.
func (w *receiverWatch) tick(res control.Result, now int64) time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.follow(res)
	p := w.period.Nanoseconds()
	boundary := res.StartNanos + (now-res.StartNanos)/p*p
	// A run that ended meanwhile has had its last line.
	if !w.ended && boundary > w.lastAt {
		w.emit(res, boundary)
	}
	return time.Duration(boundary + p - now)
}

// endLocked shows the last period of a run that ended with the final
// result res, up to its last arrival; the caller holds mu.
func (w *receiverWatch) endLocked(res control.Result) {
	w.follow(res)
	if !w.ended {
		w.emit(res, max(res.LastNanos, w.lastAt))
		w.ended = true
	}
}

// follow starts counting from the start of res's run if it is a new one.
func (w *receiverWatch) follow(res control.Result) {
	if res.Run != w.last.Run || res.StartNanos != w.last.StartNanos {
		w.last, w.lastAt, w.ended = control.Result{Run: res.Run, StartNanos: res.StartNanos}, res.StartNanos, false
	}
}

// emit shows the period from lastAt to at, whose end res describes.
func (w *receiverWatch) emit(res control.Result, at int64) {
	if arrivals(res) != arrivals(w.last) {
		w.show(receiverLine(w.last, w.lastAt, res, at))
	}
	w.last, w.lastAt = res, at
}

// arrivals counts every datagram a run accounted.
func arrivals(res control.Result) uint64 {
	return res.Counts.Received + res.Counts.Duplicates + res.Corrupt + res.Stray + res.Warmup
}

// receiverLine describes what arrived of run cur between the snapshot prev,
// taken at from, and cur, taken at to (receiver's CLOCK_MONOTONIC).
func receiverLine(prev control.Result, from int64, cur control.Result, to int64) string {
	received := cur.Counts.Received - prev.Counts.Received
	bps := 0.0
	if span := time.Duration(to - from).Seconds(); span > 0 {
		bps = float64(cur.Bytes-prev.Bytes) * 8 / span
	}
	return fmt.Sprintf("[run %d] %6.2f-%-6.2f s  received %d  %s  missing %d  corrupt %d  jitter %.1f µs",
		cur.Run, time.Duration(from-cur.StartNanos).Seconds(), time.Duration(to-cur.StartNanos).Seconds(),
		received, report.Bitrate(bps), cur.Counts.Missing(), cur.Corrupt-prev.Corrupt, cur.JitterNanos/1e3)
}
