// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package handshake

import (
	"net/netip"
	"testing"
	"time"
)

func TestRateLimiterTokenBucket(t *testing.T) {
	clock := newFakeClock()
	r := newRateLimiter(clock.Now)
	a := netip.MustParseAddr("192.0.2.1")
	b := netip.MustParseAddr("2001:db8::1")
	for i := range rateLimitBurst {
		if !r.allow(a) {
			t.Fatalf("burst message %d refused", i)
		}
	}
	if r.allow(a) {
		t.Fatal("message past the burst of 5 allowed")
	}
	if !r.allow(b) {
		t.Fatal("another source is limited by the first one's bucket")
	}
	// IPv4 seen as IPv4-mapped IPv6 is the same source.
	if r.allow(netip.AddrFrom16(a.As16())) {
		t.Fatal("IPv4-mapped form of a limited address allowed")
	}
	// 20 per second: one token per 50 ms.
	clock.Advance(rateLimitCost - time.Nanosecond)
	if r.allow(a) {
		t.Fatal("allowed before a token accrued")
	}
	clock.Advance(time.Nanosecond)
	if !r.allow(a) {
		t.Fatal("refused after 50 ms")
	}
	if r.allow(a) {
		t.Fatal("two messages on one token")
	}
	// A long pause refills to the burst, never beyond.
	clock.Advance(time.Hour)
	for i := range rateLimitBurst {
		if !r.allow(a) {
			t.Fatalf("refill: message %d refused", i)
		}
	}
	if r.allow(a) {
		t.Fatal("bucket refilled past the burst")
	}
}

func TestRateLimiterForgetsIdleSources(t *testing.T) {
	clock := newFakeClock()
	r := newRateLimiter(clock.Now)
	for i := range 100 {
		r.allow(netip.AddrFrom4([4]byte{10, 0, 0, byte(i)}))
	}
	clock.Advance(rateLimitSweep)
	r.allow(netip.MustParseAddr("192.0.2.1"))
	if n := len(r.buckets); n != 1 {
		t.Fatalf("%d buckets after a sweep, want only the active source's", n)
	}
}

// TestRateLimiterIPv6Prefix: IPv6 sources share a bucket per /64, as the kernel's WireGuard limits
// them: 100 addresses of one /64 get the burst of one source, another /64 its own.
func TestRateLimiterIPv6Prefix(t *testing.T) {
	clock := newFakeClock()
	r := newRateLimiter(clock.Now)
	allowed := 0
	for i := range 100 {
		a := netip.AddrFrom16([16]byte{0x20, 0x01, 0x0d, 0xb8, 0, 1, 0, 2, 0xaa, byte(i), 0, 0, 0, 0, byte(i >> 8), byte(i)})
		if r.allow(a) {
			allowed++
		}
	}
	if allowed != rateLimitBurst {
		t.Fatalf("100 sources in one /64: %d allowed, want the burst of %d", allowed, rateLimitBurst)
	}
	if !r.allow(netip.MustParseAddr("2001:db8:1:3::1")) {
		t.Fatal("another /64 is limited by the first one's bucket")
	}
	if !r.allow(netip.MustParseAddr("fe80::1%eth0")) || !r.allow(netip.MustParseAddr("fe80::2%eth1")) {
		t.Fatal("link-local sources refused")
	}
}
