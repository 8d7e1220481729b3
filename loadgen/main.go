// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

// Command loadgen generates UDP packet load and measures what arrives:
// delivered rate, loss, duplicates, reordering (RFC 4737), corruption,
// jitter (RFC 3550) and one-way latency, in total and per interval, and
// searches for the highest loss-free rate (RFC 2544).
//
//	loadgen recv -listen ADDR:PORT [-duration D] [-interval D] [-json]
//	loadgen send -to ADDR:PORT [-rate PPS|max | -bitrate BITS/S] [-size BYTES|imix|B1,B2,...] [-duration D] [-interval D] [-flows N] [-json]
//	loadgen sweep -to ADDR:PORT -size BYTES|imix[,...] -duration D -max-loss PERCENT [-json]
//
// A receiver listens on UDP and, for the sender's control connection, on TCP
// at the same address and port (or -control). Run "loadgen CMD -h" for all
// flags, and see docs/loadgen.md. The command line and the JSON field names
// are a committed interface (DESIGN.md).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

const usage = `usage:
  loadgen recv -listen ADDR:PORT [-duration D] [-interval D] [-json] [flags]
  loadgen send ` + sendSynopsis + `
  loadgen sweep -to ADDR:PORT -size SIZE[,SIZE...] -duration D -max-loss PERCENT [-json] [flags]
send defaults: -bitrate 1M, -size 1472 (IPv4) or 1452 (IPv6), -duration 10s, -interval 1s
run "loadgen COMMAND -h" for the flags of a command`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "loadgen:", err)
		os.Exit(2)
	}
}

// run runs one loadgen command; ctx ends it early (SIGINT, SIGTERM). Asked
// for help, a command prints its usage on stdout and run returns nil.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprintln(stderr, usage)
		return errors.New("missing command")
	}
	var err error
	switch args[0] {
	case "recv":
		err = runRecv(ctx, args[1:], stdout, stderr)
	case "send":
		err = runSend(ctx, args[1:], stdout, stderr)
	case "sweep":
		err = runSweep(ctx, args[1:], stdout, stderr)
	case "-h", "-help", "--help", "help":
		fmt.Fprintln(stdout, usage)
	default:
		fmt.Fprintln(stderr, usage)
		err = fmt.Errorf("unknown command %q", args[0])
	}
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	return err
}
