// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

// Command relay runs the seeded UDP impairment relay of package relay, for end-to-end tests that put it
// in a middle network namespace between two hosts. It prints its seed on start and its counts as JSON
// on standard output when interrupted (SIGINT or SIGTERM).
//
//	relay -listen 10.1.0.1:51820 -target 10.2.0.2:51820 -seed 7 -drop 0.01 -dup 0.05 -reorder 0.25 -corrupt 0.01
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/wirebatch/wirebatch/netns-tests/relay"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "relay:", err)
		os.Exit(1)
	}
}

func run() error {
	var (
		listen    = flag.String("listen", "", "address the left host sends to (ADDR:PORT)")
		target    = flag.String("target", "", "the right host (ADDR:PORT)")
		rightBind = flag.String("right-bind", "", "local address for the socket facing the right host (optional)")
		seed      = flag.Uint64("seed", uint64(time.Now().UnixNano()), "seed of the impairment decisions")
		both      = flag.Bool("both", true, "impair both directions (false: left to right only)")
		im        relay.Impairment
	)
	flag.Float64Var(&im.Drop, "drop", 0, "probability of dropping a datagram")
	flag.Float64Var(&im.Duplicate, "dup", 0, "probability of sending a datagram twice")
	flag.Float64Var(&im.Reorder, "reorder", 0, "probability of holding a datagram back by -reorder-delay")
	flag.DurationVar(&im.ReorderDelay, "reorder-delay", 2*time.Millisecond, "how long a reordered datagram is held back")
	flag.Float64Var(&im.Corrupt, "corrupt", 0, "probability of flipping one bit of a datagram")
	flag.IntVar(&im.CorruptFrom, "corrupt-from", 16, "bytes at the start of a datagram that corruption spares (WireGuard's header is 16)")
	flag.Float64Var(&im.RatePPS, "rate", 0, "datagrams per second forwarded per direction (0: unlimited)")
	flag.IntVar(&im.RateBurst, "burst", 64, "token-bucket burst for -rate")
	flag.Parse()
	if flag.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", flag.Args())
	}

	cfg := relay.Config{Seed: *seed, LeftToRight: im}
	if *both {
		cfg.RightToLeft = im
	}
	var err error
	if cfg.Listen, err = netip.ParseAddrPort(*listen); err != nil {
		return fmt.Errorf("-listen: %w", err)
	}
	if cfg.Target, err = netip.ParseAddrPort(*target); err != nil {
		return fmt.Errorf("-target: %w", err)
	}
	if *rightBind != "" {
		if cfg.RightBind, err = netip.ParseAddrPort(*rightBind); err != nil {
			return fmt.Errorf("-right-bind: %w", err)
		}
	}
	r, err := relay.New(cfg)
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "relay: seed %d, %v -> %v\n", cfg.Seed, r.LeftAddr(), cfg.Target)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := r.Run(ctx); err != nil {
		return err
	}
	return json.NewEncoder(os.Stdout).Encode(r.Stats())
}
