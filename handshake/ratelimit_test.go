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
