// Command loadgen generates UDP packet load and measures what arrives:
// delivered rate, loss, duplicates, reordering (RFC 4737), corruption and
// one-way latency, and searches for the highest loss-free rate (RFC 2544).
//
//	loadgen recv -listen ADDR:PORT [-duration D] [-json]
//	loadgen send -to ADDR:PORT -rate PPS|max -size BYTES|imix|B1,B2,... -duration D [-flows N] [-json]
//	loadgen sweep -to ADDR:PORT -size BYTES|imix[,...] -duration D -max-loss PERCENT [-json]
//
// A receiver listens on UDP and, for the sender's control connection, on TCP
// at the same address and port (or -control). Run "loadgen CMD -h" for all
// flags. The command line and the JSON field names are a committed interface
// (DESIGN.md).
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
  loadgen recv -listen ADDR:PORT [-duration D] [-json] [flags]
  loadgen send -to ADDR:PORT -rate PPS|max -size BYTES|imix|B1,B2,... -duration D [-flows N] [-json] [flags]
  loadgen sweep -to ADDR:PORT -size SIZE[,SIZE...] -duration D -max-loss PERCENT [-json] [flags]
run "loadgen COMMAND -h" for the flags of a command`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "loadgen:", err)
		}
		os.Exit(2)
	}
}

// run runs one loadgen command; ctx ends it early (SIGINT, SIGTERM).
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprintln(stderr, usage)
		return errors.New("missing command")
	}
	switch args[0] {
	case "recv":
		return runRecv(ctx, args[1:], stdout, stderr)
	case "send":
		return runSend(ctx, args[1:], stdout, stderr)
	case "sweep":
		return runSweep(ctx, args[1:], stdout, stderr)
	case "-h", "-help", "--help", "help":
		fmt.Fprintln(stdout, usage)
		return nil
	}
	fmt.Fprintln(stderr, usage)
	return fmt.Errorf("unknown command %q", args[0])
}
