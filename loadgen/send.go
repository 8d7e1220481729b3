// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package main

import (
	"context"
	"fmt"
	"io"

	"github.com/wirebatch/wirebatch/loadgen/internal/payload"
	"github.com/wirebatch/wirebatch/loadgen/internal/report"
	"github.com/wirebatch/wirebatch/loadgen/internal/sender"
)

const sendSynopsis = "-to ADDR:PORT [-rate PPS|max | -bitrate BITS/S] [-size BYTES|imix|B1,B2,...] [-duration D] [-interval D] [-flows N] [-json] [flags]"

// sendOptions are the parsed flags of send.
type sendOptions struct {
	cfg      sender.Config
	sizeSpec string // -size as given, or the default
	jsonOut  bool
	quiet    bool
}

// parseSend parses and checks the flags of send, filling in the defaults.
func parseSend(args []string, stdout, stderr io.Writer) (sendOptions, error) {
	fs := newFlagSet("send", sendSynopsis)
	var f senderFlags
	f.register(fs, defaultDuration)
	rateArg := fs.String("rate", "", "packets per second (100000, 100k, 2M) or max; excludes -bitrate")
	bitrateArg := fs.String("bitrate", "", "`bits` per second of UDP payload (the datagrams' data, loadgen's header included; not the UDP, IP or link headers), "+
		"as iperf3 -b counts: 500K, 100M, 2.5G, decimal (1M = 10^6); 0 or max for as fast as possible; "+
		"imix or a size list is paced at its mean size (default 1M when -rate is not given either)")
	fs.StringVar(&f.size, "size", "", "UDP payload bytes, imix (IP packets of 64/576/1500 bytes, 7:4:1), or a comma-separated list sent in turn "+
		"(default: a 1500-byte IP packet's, 1472 over IPv4 and 1452 over IPv6)")
	interval := fs.Duration("interval", defaultInterval, "report every `D` of sending: lines in the text report, \"intervals\" in JSON; 0 for none")
	if err := parseArgs(fs, args, stdout, stderr); err != nil {
		return sendOptions{}, err
	}
	cfg, err := f.config()
	if err != nil {
		return sendOptions{}, err
	}
	if *interval < 0 {
		return sendOptions{}, fmt.Errorf("-interval %v: must not be negative (0 for no intervals)", *interval)
	}
	cfg.Interval = *interval
	if f.size == "" {
		f.size = fmt.Sprint(payload.DefaultSize(isIPv6(f.to)))
	}
	if cfg.Sizes, err = payload.ParseSizes(f.size, isIPv6(f.to)); err != nil {
		return sendOptions{}, fmt.Errorf("-size: %w", err)
	}
	if cfg.Rate, err = sendRate(*rateArg, *bitrateArg, cfg.Sizes); err != nil {
		return sendOptions{}, err
	}
	if err := cfg.Validate(); err != nil {
		return sendOptions{}, err
	}
	return sendOptions{cfg: cfg, sizeSpec: f.size, jsonOut: f.jsonOut, quiet: f.quiet}, nil
}

func runSend(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	opts, err := parseSend(args, stdout, stderr)
	if err != nil {
		return err
	}
	cfg := opts.cfg
	// Interval lines go with the text report; the one-line progress display
	// stands in for them with -json or without intervals.
	if !opts.jsonOut && cfg.Interval > 0 {
		header := false
		cfg.OnInterval = func(iv sender.Interval) {
			if !header {
				fmt.Fprintln(stdout, report.IntervalHeader)
				header = true
			}
			fmt.Fprintln(stdout, report.NewInterval(iv).Line())
		}
	}
	progress := progressWriter(stderr, opts.quiet || cfg.OnInterval != nil)
	if progress != nil {
		var pr report.Progress
		cfg.Progress = func(p sender.Progress) { fmt.Fprintf(progress, "\r\033[K%s", pr.Line(p)) }
	}
	res, err := sender.Run(ctx, cfg)
	if progress != nil {
		fmt.Fprint(progress, "\r\033[K") // the report replaces the progress line
	}
	if err != nil {
		return err
	}
	r := report.New(cfg, opts.sizeSpec, res)
	for _, w := range r.Warnings {
		fmt.Fprintln(stderr, "loadgen: warning:", w)
	}
	if opts.jsonOut {
		return r.WriteJSON(stdout)
	}
	return r.WriteText(stdout)
}
