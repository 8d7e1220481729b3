// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package handshake

import (
	"net/netip"
	"sync"
	"time"
)

// Handshake rate limiting (paper section 5.3: handshakes cost a DH each, so a responder under load
// bounds how many it computes per source). Like wireguard-go's ratelimiter: a token bucket per source
// address refilled at 20 handshakes per second and holding at most 5.
const (
	rateLimitPerSecond = 20
	rateLimitBurst     = 5

	rateLimitCost = time.Second / rateLimitPerSecond // tokens are measured in time
	rateLimitMax  = rateLimitCost * rateLimitBurst

	// rateLimitSweep is how often idle buckets are dropped: a bucket idle this long is full again,
	// so forgetting it changes no decision and keeps the table as small as the set of active sources.
	rateLimitSweep = time.Second

	// initiationRate is the shortest time between two initiations accepted from one peer
	// (wireguard-go's HandshakeInitationRate: 50 a second).
	initiationRate = time.Second / 50
)

// rateLimiter is a per-source-address token bucket. It is only consulted for messages that passed
// MAC1 and, under load, MAC2 (Identity.HandleMessage), so the sources it tracks have proven they can
// receive at their address: spoofed floods cannot grow the table. Safe for concurrent use.
type rateLimiter struct {
	now func() time.Time

	mu        sync.Mutex
	buckets   map[netip.Addr]*tokenBucket
	lastSweep time.Time
}

type tokenBucket struct {
	tokens time.Duration
	last   time.Time
}

func newRateLimiter(now func() time.Time) *rateLimiter {
	return &rateLimiter{now: now, buckets: make(map[netip.Addr]*tokenBucket)}
}

// allow takes one token from the bucket of addr's source and reports whether there was one. An
// IPv4 source is its address; an IPv6 source is its /64, as the Linux kernel's WireGuard limits
// it: one host holds a whole /64, so per address it could take 2^64 buckets' worth of handshakes.
func (r *rateLimiter) allow(addr netip.Addr) bool {
	addr = addr.Unmap() // an IPv4 source seen through a dual-stack socket shares the IPv4 bucket
	if addr.Is6() {
		p, _ := addr.WithZone("").Prefix(64)
		addr = p.Addr()
	}
	now := r.now()

	r.mu.Lock()
	defer r.mu.Unlock()
	if now.Sub(r.lastSweep) >= rateLimitSweep {
		for a, b := range r.buckets {
			if now.Sub(b.last) >= rateLimitSweep {
				delete(r.buckets, a)
			}
		}
		r.lastSweep = now
	}

	b, ok := r.buckets[addr]
	if !ok {
		r.buckets[addr] = &tokenBucket{tokens: rateLimitMax - rateLimitCost, last: now}
		return true
	}
	if elapsed := now.Sub(b.last); elapsed > 0 {
		b.tokens = min(b.tokens+elapsed, rateLimitMax)
	}
	b.last = now
	if b.tokens < rateLimitCost {
		return false
	}
	b.tokens -= rateLimitCost
	return true
}
