// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/wirebatch/wirebatch/loadgen/internal/payload"
	"github.com/wirebatch/wirebatch/loadgen/internal/report"
	"github.com/wirebatch/wirebatch/loadgen/internal/sender"
	"github.com/wirebatch/wirebatch/loadgen/internal/sweep"
)

// sweepResult is the search of one packet size, as printed by -json.
type sweepResult struct {
	Size          string        `json:"size"`
	ThroughputPPS float64       `json:"throughput_pps"`
	Trials        []sweep.Trial `json:"trials"`
}

func runSweep(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("sweep", "-to ADDR:PORT -size SIZE[,SIZE...] -duration D -max-loss PERCENT [flags]")
	var f senderFlags
	f.register(fs, 0)
	fs.StringVar(&f.size, "size", "", "comma-separated payload sizes in bytes or imix, each searched separately")
	maxLoss := fs.Float64("max-loss", 0, "loss in `percent` a passing trial may have (RFC 2544: 0)")
	resolution := fs.Float64("resolution", 1, "stop when the search interval is below this `percent` of the rate")
	maxTrials := fs.Int("trials", 12, "most trials per size")
	if err := parseArgs(fs, args, stdout, stderr); err != nil {
		return err
	}
	cfg, err := f.config()
	if err != nil {
		return err
	}
	if f.size == "" {
		return fmt.Errorf("-size is required (e.g. -size 64,1400 or imix)")
	}
	params := sweep.Params{MaxLossPct: *maxLoss, Resolution: *resolution / 100, MaxTrials: *maxTrials}
	var specs []string
	for spec := range strings.SplitSeq(f.size, ",") {
		spec = strings.TrimSpace(spec)
		if _, err := payload.ParseSizes(spec, isIPv6(f.to)); err != nil {
			return fmt.Errorf("-size: %w", err)
		}
		specs = append(specs, spec)
	}
	// Validate once with a placeholder size; each search sets its own.
	cfg.Sizes = []int{payload.HeaderSize}
	if err := cfg.Validate(); err != nil {
		return err
	}
	session, err := sender.Connect(cfg)
	if err != nil {
		return err
	}
	defer session.Close()

	var results []sweepResult
	for _, spec := range specs {
		cfg.Sizes, _ = payload.ParseSizes(spec, isIPv6(f.to)) // checked above
		if !f.jsonOut {
			fmt.Fprintf(stdout, "size %s: max loss %g%%, %v trials\n", spec, *maxLoss, cfg.Duration)
			fmt.Fprintf(stdout, "  %5s %14s %14s %14s %10s %s\n", "trial", "requested pps", "offered pps", "delivered pps", "loss %", "result")
		}
		trialNumber := 0
		throughput, trials, err := sweep.Search(params, func(rate float64) (sweep.Outcome, error) {
			trialCfg := cfg
			trialCfg.Rate = rate
			res, err := session.Run(ctx, trialCfg)
			if err != nil {
				return sweep.Outcome{}, err
			}
			if ctx.Err() != nil {
				return sweep.Outcome{}, ctx.Err()
			}
			trialNumber++
			r := report.New(trialCfg, spec, res)
			out := sweep.Outcome{Offered: r.PPSSent, Delivered: r.PPSReceived, LossPct: r.LostPct}
			if !f.jsonOut {
				requested := "max"
				if rate > 0 {
					requested = fmt.Sprintf("%.0f", rate)
				}
				verdict := "pass"
				if out.LossPct > *maxLoss {
					verdict = "fail"
				}
				fmt.Fprintf(stdout, "  %5d %14s %14.0f %14.0f %10.4f %s\n", trialNumber, requested, out.Offered, out.Delivered, out.LossPct, verdict)
			}
			return out, nil
		})
		if err != nil {
			return fmt.Errorf("size %s: %w", spec, err)
		}
		results = append(results, sweepResult{Size: spec, ThroughputPPS: throughput, Trials: trials})
		if !f.jsonOut {
			fmt.Fprintf(stdout, "  throughput %.0f packets/s (%.3f Gbit/s of payload)\n",
				throughput, throughput*payload.MeanSize(cfg.Sizes)*8/1e9)
		}
	}
	if f.jsonOut {
		return json.NewEncoder(stdout).Encode(map[string]any{"sweep": results})
	}
	return nil
}
