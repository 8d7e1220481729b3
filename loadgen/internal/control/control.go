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
	// payload) of the unique packets.
	Latency Latency `json:"latency_ns"`
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
