// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

// Package relay is a seeded UDP impairment relay: it forwards datagrams between a left and a right host
// and drops, duplicates, reorders, corrupts and rate-limits them with given probabilities. The test
// kernel has no netem, so end-to-end tests put this relay in a middle network namespace instead. The
// same seed and the same arrival order give the same decisions, and every decision is counted, so a
// test can check what arrived against what the relay let through.
package relay

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"
)

// Impairment says what happens to datagrams in one direction. Probabilities are in [0, 1] and are
// drawn independently per datagram, in the order drop, corrupt, duplicate, reorder.
type Impairment struct {
	Drop      float64
	Duplicate float64
	Reorder   float64 // hold the datagram back for ReorderDelay, letting later ones overtake it
	Corrupt   float64 // flip one bit of one byte at or after CorruptFrom
	// CorruptFrom protects a prefix of each datagram from corruption, e.g. 16 for WireGuard's
	// transport header, so that a corrupted datagram still reaches its keypair and fails
	// authentication instead of being dropped as malformed.
	CorruptFrom  int
	ReorderDelay time.Duration
	// RatePPS limits forwarded datagrams per second with a token bucket of RateBurst; excess datagrams
	// are dropped. 0 means unlimited.
	RatePPS   float64
	RateBurst int
}

func (im Impairment) validate() error {
	for _, p := range []float64{im.Drop, im.Duplicate, im.Reorder, im.Corrupt} {
		if p < 0 || p > 1 {
			return fmt.Errorf("relay: probability %v outside [0, 1]", p)
		}
	}
	if im.Reorder > 0 && im.ReorderDelay <= 0 {
		return errors.New("relay: Reorder needs a positive ReorderDelay")
	}
	if im.CorruptFrom < 0 || im.RatePPS < 0 || im.RateBurst < 0 {
		return errors.New("relay: negative CorruptFrom, RatePPS or RateBurst")
	}
	return nil
}

// Config describes one relay.
type Config struct {
	// Listen is where the left host sends; the relay answers it from there.
	Listen netip.AddrPort
	// Target is the right host. The relay sends to it from RightBind (any port when RightBind's port is 0).
	Target    netip.AddrPort
	RightBind netip.AddrPort
	// Seed makes the impairment decisions reproducible; LeftToRight uses Seed and RightToLeft Seed+1.
	Seed        uint64
	LeftToRight Impairment
	RightToLeft Impairment
}

// Counts are one direction's tallies. Every received datagram is either dropped (Dropped or
// RateLimited) or forwarded; Duplicated ones are forwarded twice.
type Counts struct {
	Received    uint64 `json:"received"`
	Forwarded   uint64 `json:"forwarded"` // datagrams sent, duplicates included
	Dropped     uint64 `json:"dropped"`
	RateLimited uint64 `json:"rate_limited"`
	Duplicated  uint64 `json:"duplicated"`
	Reordered   uint64 `json:"reordered"`
	Corrupted   uint64 `json:"corrupted"`
}

// Stats are both directions' tallies.
type Stats struct {
	Seed        uint64 `json:"seed"`
	LeftToRight Counts `json:"left_to_right"`
	RightToLeft Counts `json:"right_to_left"`
}

// Relay forwards until its context ends.
type Relay struct {
	cfg   Config
	left  *net.UDPConn
	right *net.UDPConn

	// leftPeer is the address the left host last sent from; right-to-left datagrams go there.
	leftPeer atomic.Pointer[netip.AddrPort]

	l2r, r2l direction
}

type direction struct {
	counts [7]atomic.Uint64 // indexed like the fields of Counts
}

const (
	cReceived = iota
	cForwarded
	cDropped
	cRateLimited
	cDuplicated
	cReordered
	cCorrupted
)

func (d *direction) add(i int) { d.counts[i].Add(1) }

func (d *direction) snapshot() Counts {
	c := &d.counts
	return Counts{c[cReceived].Load(), c[cForwarded].Load(), c[cDropped].Load(), c[cRateLimited].Load(),
		c[cDuplicated].Load(), c[cReordered].Load(), c[cCorrupted].Load()}
}

// New opens the relay's two sockets.
func New(cfg Config) (*Relay, error) {
	if err := cfg.LeftToRight.validate(); err != nil {
		return nil, err
	}
	if err := cfg.RightToLeft.validate(); err != nil {
		return nil, err
	}
	if !cfg.Target.IsValid() {
		return nil, errors.New("relay: Target is required")
	}
	left, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(cfg.Listen))
	if err != nil {
		return nil, fmt.Errorf("relay: listening on %v: %w", cfg.Listen, err)
	}
	var rightAddr *net.UDPAddr
	if cfg.RightBind.IsValid() {
		rightAddr = net.UDPAddrFromAddrPort(cfg.RightBind)
	}
	right, err := net.ListenUDP("udp", rightAddr)
	if err != nil {
		left.Close()
		return nil, fmt.Errorf("relay: binding the right-hand socket: %w", err)
	}
	return &Relay{cfg: cfg, left: left, right: right}, nil
}

// LeftAddr is the address the left host should send to.
func (r *Relay) LeftAddr() netip.AddrPort { return r.left.LocalAddr().(*net.UDPAddr).AddrPort() }

// Stats returns the tallies so far.
func (r *Relay) Stats() Stats {
	return Stats{Seed: r.cfg.Seed, LeftToRight: r.l2r.snapshot(), RightToLeft: r.r2l.snapshot()}
}

// Run forwards in both directions until ctx ends, then closes the sockets and waits for held-back
// datagrams to be abandoned.
func (r *Relay) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	wg.Add(2)
	go func() {
		defer wg.Done()
		errs <- r.forward(ctx, r.left, r.right, &r.l2r, r.cfg.LeftToRight, r.cfg.Seed, true)
	}()
	go func() {
		defer wg.Done()
		errs <- r.forward(ctx, r.right, r.left, &r.r2l, r.cfg.RightToLeft, r.cfg.Seed+1, false)
	}()
	<-ctx.Done()
	r.left.Close()
	r.right.Close()
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// forward moves datagrams read from in to out, impaired by im. leftToRight says which way it runs:
// left-to-right remembers the left host's address and sends to Target; the other way sends to the
// remembered left address (and drops datagrams until the left host has spoken).
func (r *Relay) forward(ctx context.Context, in, out *net.UDPConn, d *direction, im Impairment, seed uint64, leftToRight bool) error {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	bucket := tokenBucket{rate: im.RatePPS, burst: float64(max(im.RateBurst, 1))}
	buf := make([]byte, 65536)
	for {
		n, from, err := in.ReadFromUDPAddrPort(buf)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("relay: read: %w", err)
		}
		d.add(cReceived)
		var to netip.AddrPort
		if leftToRight {
			r.leftPeer.Store(&from)
			to = r.cfg.Target
		} else if p := r.leftPeer.Load(); p != nil {
			to = *p
		} else {
			d.add(cDropped)
			continue
		}
		// Draw every decision for every datagram so one probability's change does not shift the others.
		drop := rng.Float64() < im.Drop
		corrupt := rng.Float64() < im.Corrupt
		dup := rng.Float64() < im.Duplicate
		reorder := rng.Float64() < im.Reorder
		corruptAt, corruptBit := rng.IntN(1<<30), rng.IntN(8)
		switch {
		case drop:
			d.add(cDropped)
			continue
		case !bucket.take(time.Now()):
			d.add(cRateLimited)
			continue
		}
		pkt := buf[:n]
		if corrupt && n > im.CorruptFrom {
			pkt[im.CorruptFrom+corruptAt%(n-im.CorruptFrom)] ^= 1 << corruptBit
			d.add(cCorrupted)
		}
		copies := 1
		if dup {
			copies = 2
			d.add(cDuplicated)
		}
		if reorder {
			held := append([]byte(nil), pkt...)
			d.add(cReordered)
			time.AfterFunc(im.ReorderDelay, func() {
				for range copies {
					if _, err := out.WriteToUDPAddrPort(held, to); err == nil {
						d.add(cForwarded)
					}
				}
			})
			continue
		}
		for range copies {
			if _, err := out.WriteToUDPAddrPort(pkt, to); err == nil {
				d.add(cForwarded)
			}
		}
	}
}

// tokenBucket admits rate datagrams per second with bursts of up to burst; a zero rate admits all.
type tokenBucket struct {
	rate, burst, tokens float64
	last                time.Time
}

func (b *tokenBucket) take(now time.Time) bool {
	if b.rate == 0 {
		return true
	}
	if b.last.IsZero() {
		b.tokens = b.burst
	} else {
		b.tokens = min(b.burst, b.tokens+now.Sub(b.last).Seconds()*b.rate)
	}
	b.last = now
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}
