// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

// Package control is the conversation between a sender and a receiver on a
// TCP connection beside the UDP traffic: the sender opens a run, may poll its
// progress, and closes it to fetch what the receiver counted. Messages are
// JSON objects, one per line; every exchange has a deadline, so a receiver
// that is unreachable or vanishes is reported instead of waited for.
package control

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/wirebatch/wirebatch/loadgen/internal/flow"
)

// Operations a sender asks for.
const (
	OpStart = "start" // open run Run, discarding any earlier one
	OpPoll  = "poll"  // counts of run Run so far
	OpStop  = "stop"  // close run Run and return its final counts
)

// Request is one sender message.
type Request struct {
	Op  string `json:"op"`
	Run uint32 `json:"run"`
	// Grid, in a start request, asks the receiver to count the run's
	// packets per sending interval; the zero Grid asks for totals only.
	Grid Grid `json:"grid"`
	// From, in a poll request, is the first interval to return; a poll
	// needs only the intervals the sender has not reported yet.
	From int `json:"from"`
}

// MaxIntervals bounds Grid.Count, and with it the memory a start request
// makes the receiver set aside.
const MaxIntervals = 100_000

// Grid divides a run's measured period into intervals on the sender's
// clock: interval k holds the packets whose send time (payload.Header
// SendNanos) lies in [Origin+k·Interval, Origin+(k+1)·Interval), the last
// one ending at Origin+Duration. Binning by send time, not arrival time,
// makes per-interval loss exact (each packet is compared with the interval
// it was sent in) and needs no agreement between the two hosts' clocks.
type Grid struct {
	Origin   int64 `json:"origin_ns"`   // sender's CLOCK_MONOTONIC
	Interval int64 `json:"interval_ns"` // 0: no intervals
	Duration int64 `json:"duration_ns"`
}

// Count is the number of intervals, the last possibly shorter.
func (g Grid) Count() int {
	if g.Interval <= 0 || g.Duration <= 0 {
		return 0
	}
	return int((g.Duration-1)/g.Interval) + 1
}

// Check rejects grids a receiver should not allocate for.
func (g Grid) Check() error {
	if g == (Grid{}) {
		return nil
	}
	if g.Origin < 0 || g.Interval <= 0 || g.Duration <= 0 {
		return fmt.Errorf("interval grid %+v: want a positive interval and duration", g)
	}
	if (g.Duration-1)/g.Interval >= MaxIntervals {
		return fmt.Errorf("interval grid: %v in intervals of %v is more than %d intervals",
			time.Duration(g.Duration), time.Duration(g.Interval), MaxIntervals)
	}
	return nil
}

// Index returns the interval of a send time. Times before the origin
// count in the first interval and times after the end in the last: a
// sender stamps a burst when it sends it, so its last burst may carry a
// stamp a wake-up delay past the end. g must have passed Check and have a
// positive Count.
func (g Grid) Index(sendNanos int64) int {
	if sendNanos <= g.Origin {
		return 0
	}
	return min(int((sendNanos-g.Origin)/g.Interval), g.Count()-1)
}

// Bounds returns interval k's start and end in nanoseconds after Origin.
func (g Grid) Bounds(k int) (start, end int64) {
	start = int64(k) * g.Interval
	return start, min(start+g.Interval, g.Duration)
}

// Interval is what a receiver counted of the packets sent in one interval
// of a Grid.
type Interval struct {
	// Received counts unique packets and Bytes their UDP payload bytes.
	Received uint64 `json:"received"`
	Bytes    uint64 `json:"bytes"`
	// Duplicates and Reordered are as in flow.Counts.
	Duplicates uint64 `json:"duplicates"`
	Reordered  uint64 `json:"reordered"`
	// JitterNanos is Result.JitterNanos as it stood after the last of these
	// packets arrived.
	JitterNanos float64 `json:"jitter_ns"`
}

// Response answers one Request: Error, or the run's Result.
type Response struct {
	Error  string `json:"error,omitempty"`
	Result Result `json:"result"`
}

// Latency is a latency distribution summary in nanoseconds.
type Latency struct {
	P50  int64 `json:"p50"`
	P90  int64 `json:"p90"`
	P99  int64 `json:"p99"`
	P999 int64 `json:"p999"`
	Max  int64 `json:"max"`
}

// Result is what a receiver measured for one run.
type Result struct {
	Run    uint32      `json:"run"`
	Counts flow.Counts `json:"counts"`
	// Flows is how many flows delivered packets.
	Flows int `json:"flows"`
	// Corrupt counts datagrams whose payload did not verify.
	Corrupt uint64 `json:"corrupt"`
	// Stray counts valid packets of other runs (late ones from a run already
	// stopped, or a second sender); Warmup counts warm-up packets.
	Stray  uint64 `json:"stray"`
	Warmup uint64 `json:"warmup"`
	// Bytes is the UDP payload bytes of the unique packets.
	Bytes uint64 `json:"bytes"`
	// FirstNanos and LastNanos are the CLOCK_MONOTONIC arrival times of the
	// first and last packet counted.
	FirstNanos int64 `json:"first_ns"`
	LastNanos  int64 `json:"last_ns"`
	// Latency is the one-way latency (arrival minus the send time in the
	// payload) of the unique packets. Only a sender on the same host shares
	// the receiver's CLOCK_MONOTONIC; from another host the figures include
	// the offset between the clocks.
	Latency Latency `json:"latency_ns"`
	// LatencyOutOfRange counts packets whose one-way latency was negative
	// or above a minute, which only a sender with another clock produces;
	// they are recorded at the nearest end of the range (1ns, a minute).
	LatencyOutOfRange uint64 `json:"latency_out_of_range"`
	// JitterNanos is the interarrival jitter of RFC 3550 section 6.4.1,
	// the mean of the flows' estimates.
	JitterNanos float64 `json:"jitter_ns"`
	// Intervals holds the counts per interval of the run's Grid, from the
	// request's From on (all of them in a stop response).
	Intervals []Interval `json:"intervals,omitempty"`
	// StartNanos is when the run opened, on the receiver's CLOCK_MONOTONIC.
	StartNanos int64 `json:"start_ns"`
	// ClockNanos is the receiver's CLOCK_MONOTONIC when it answered; a
	// sender compares it with its own clock to tell whether they are one.
	ClockNanos int64 `json:"clock_ns"`
	// CPUNanos is the user and system CPU time of the receiving process
	// from the start of the run to its end (getrusage; a process that also
	// sends, as in tests, counts both).
	CPUNanos int64 `json:"cpu_ns"`
	// GRO says whether the receiver had UDP GRO on.
	GRO bool `json:"gro"`
}

// Client is the sender's end of a control connection.
type Client struct {
	conn    net.Conn
	timeout time.Duration
	enc     *json.Encoder
	dec     *json.Decoder
}

// Dial connects to a receiver's control address, giving up after timeout,
// which also bounds every later exchange.
func Dial(addr string, timeout time.Duration) (*Client, error) {
	conn, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return nil, fmt.Errorf("receiver control connection: %w", err)
	}
	return &Client{conn: conn, timeout: timeout, enc: json.NewEncoder(conn), dec: json.NewDecoder(bufio.NewReader(conn))}, nil
}

// Call sends req and waits for the response. A receiver-side error comes
// back as an error too.
func (c *Client) Call(req Request) (Result, error) {
	if err := c.conn.SetDeadline(time.Now().Add(c.timeout)); err != nil {
		return Result{}, err
	}
	if err := c.enc.Encode(req); err != nil {
		return Result{}, fmt.Errorf("receiver control connection lost: %w", err)
	}
	var resp Response
	if err := c.dec.Decode(&resp); err != nil {
		return Result{}, fmt.Errorf("receiver control connection lost during %s: %w", req.Op, err)
	}
	if resp.Error != "" {
		return Result{}, fmt.Errorf("receiver: %s", resp.Error)
	}
	return resp.Result, nil
}

// Close closes the connection.
func (c *Client) Close() error { return c.conn.Close() }

// Handler answers requests on the receiver's side.
type Handler func(Request) (Result, error)

// Serve answers requests on conn until the sender closes it or idle passes
// without a request (senders poll at least once a second while a run is
// open); it closes conn.
func Serve(conn net.Conn, idle time.Duration, handle Handler) error {
	defer conn.Close()
	dec := json.NewDecoder(bufio.NewReader(conn))
	enc := json.NewEncoder(conn)
	for {
		conn.SetDeadline(time.Now().Add(idle))
		var req Request
		if err := dec.Decode(&req); err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) {
				return nil
			}
			return err
		}
		var resp Response
		result, err := handle(req)
		if err != nil {
			resp.Error = err.Error()
		} else {
			resp.Result = result
		}
		if err := enc.Encode(resp); err != nil {
			return err
		}
	}
}
