package main

import (
	"context"
	"fmt"
	"io"

	"github.com/wirebatch/wirebatch/loadgen/internal/payload"
	"github.com/wirebatch/wirebatch/loadgen/internal/report"
	"github.com/wirebatch/wirebatch/loadgen/internal/sender"
)

func runSend(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("send", "-to ADDR:PORT -rate PPS|max -size BYTES|imix|B1,B2,... -duration D [flags]", stderr)
	var f senderFlags
	f.register(fs)
	rateArg := fs.String("rate", "", "packets per second (100000, 100k, 2M) or max")
	fs.StringVar(&f.size, "size", "", "UDP payload bytes, imix (IP packets of 64/576/1500 bytes, 7:4:1), or a comma-separated list sent in turn")
	if err := parseArgs(fs, args); err != nil {
		return err
	}
	cfg, err := f.config()
	if err != nil {
		return err
	}
	if *rateArg == "" {
		return fmt.Errorf("-rate is required (packets per second, or max)")
	}
	if cfg.Rate, err = parseRate(*rateArg); err != nil {
		return err
	}
	if f.size == "" {
		return fmt.Errorf("-size is required (bytes, imix, or a list)")
	}
	if cfg.Sizes, err = payload.ParseSizes(f.size, isIPv6(f.to)); err != nil {
		return fmt.Errorf("-size: %w", err)
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	progress := progressWriter(stderr, f.quiet)
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
	r := report.New(cfg, f.size, res)
	if f.jsonOut {
		return r.WriteJSON(stdout)
	}
	return r.WriteText(stdout)
}
