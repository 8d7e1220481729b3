package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/wirebatch/wirebatch/loadgen/internal/control"
	"github.com/wirebatch/wirebatch/loadgen/internal/receiver"
)

func runRecv(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("recv", "-listen ADDR:PORT [-duration D] [flags]", stderr)
	listen := fs.String("listen", "", "UDP `ADDR:PORT` to receive on")
	controlAddr := fs.String("control", "", "control `ADDR:PORT` (TCP; default: -listen)")
	duration := fs.Duration("duration", 0, "stop after this long (default: until interrupted)")
	batch := fs.Int("batch", defaultBatch, "messages per recvmmsg")
	gro := fs.Bool("gro", true, "let the kernel coalesce datagrams (UDP GRO)")
	sockBuf := fs.Int("sockbuf", defaultSocketBuffer, "socket buffer `bytes`")
	jsonOut := fs.Bool("json", false, "print each run's counts as JSON")
	quiet := fs.Bool("quiet", false, "no progress display on stderr")
	if err := parseArgs(fs, args); err != nil {
		return err
	}
	if *listen == "" {
		return fmt.Errorf("-listen ADDR:PORT is required")
	}
	if *duration < 0 {
		return fmt.Errorf("-duration %v: must not be negative", *duration)
	}
	progress := progressWriter(stderr, *quiet)
	var outMu sync.Mutex // runs end on the reading and control goroutines
	r, err := receiver.Listen(receiver.Config{
		Listen: *listen, Control: *controlAddr, Batch: *batch, GRO: *gro, SocketBuffer: *sockBuf,
		OnRunEnd: func(res control.Result) {
			outMu.Lock()
			defer outMu.Unlock()
			if progress != nil {
				fmt.Fprint(progress, "\r\033[K") // the report replaces the progress line
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
	if progress != nil {
		go showReceiverProgress(ctx, progress, r, &outMu)
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
	fmt.Fprintf(w, "  latency µs p50 %.1f  p90 %.1f  p99 %.1f  p99.9 %.1f  max %.1f; cpu %.2fs\n",
		float64(l.P50)/1e3, float64(l.P90)/1e3, float64(l.P99)/1e3, float64(l.P999)/1e3, float64(l.Max)/1e3,
		time.Duration(res.CPUNanos).Seconds())
}

// showReceiverProgress updates a one-line display each second until ctx ends.
func showReceiverProgress(ctx context.Context, w io.Writer, r *receiver.Receiver, outMu *sync.Mutex) {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	var last uint64
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		res, ok := r.Current()
		if !ok {
			continue
		}
		got := res.Counts.Received
		outMu.Lock()
		fmt.Fprintf(w, "\r\033[Krun %d: %d pps, received %d, missing %d, corrupt %d",
			res.Run, got-min(got, last), got, res.Counts.Missing(), res.Corrupt)
		outMu.Unlock()
		last = got
	}
}
