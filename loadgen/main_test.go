// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wirebatch/wirebatch/loadgen/internal/control"
	"github.com/wirebatch/wirebatch/loadgen/internal/flow"
	"github.com/wirebatch/wirebatch/loadgen/internal/payload"
)

// TestMain runs the command itself when the test binary is started with
// runMainEnv set, so that tests can check its exit status.
func TestMain(m *testing.M) {
	if os.Getenv(runMainEnv) != "" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

const runMainEnv = "LOADGEN_TEST_RUN_MAIN"

// startRecv runs "loadgen recv" in-process on a free loopback port until
// the test ends, and returns the address and the command's stdout.
func startRecv(t *testing.T, extra ...string) (string, *bytes.Buffer) {
	t.Helper()
	// Find a port free for UDP and TCP alike.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	ctx, cancel := context.WithCancel(context.Background())
	var out, errOut bytes.Buffer
	done := make(chan error)
	go func() {
		done <- run(ctx, append([]string{"recv", "-listen", addr, "-sockbuf", "4194304"}, extra...), &out, &errOut)
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("recv: %v\n%s", err, errOut.String())
		}
	})
	return addr, &out
}

// runUntilListening runs a loadgen command that contacts the receiver at
// addr, retrying while the receiver is not listening yet.
func runUntilListening(t *testing.T, args ...string) string {
	t.Helper()
	var out, errOut bytes.Buffer
	var err error
	for range 50 {
		out.Reset()
		err = run(context.Background(), args, &out, &errOut)
		if err == nil || !strings.Contains(err.Error(), "refused") {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("loadgen %q: %v\n%s", args, err, errOut.String())
	}
	return out.String()
}

// TestSendAndReceiveCommands runs "loadgen recv" and "loadgen send -json"
// in-process over loopback and checks the committed JSON fields.
func TestSendAndReceiveCommands(t *testing.T) {
	addr, recvOut := startRecv(t, "-json")
	sendOut := runUntilListening(t, "send", "-to", addr, "-rate", "10k", "-size", "64,1400",
		"-duration", "200ms", "-interval", "50ms", "-flows", "2", "-drain", "50ms", "-json")

	var report map[string]any
	if err := json.Unmarshal([]byte(sendOut), &report); err != nil {
		t.Fatalf("send -json printed %q: %v", sendOut, err)
	}
	for _, field := range []string{"sent", "received", "lost", "duplicates", "reordered", "pps_sent", "pps_received", "gbps_received", "latency_us",
		"jitter_us", "latency_valid", "intervals"} {
		if _, ok := report[field]; !ok {
			t.Errorf("JSON report lacks %q: %s", field, sendOut)
		}
	}
	latency, _ := report["latency_us"].(map[string]any)
	for _, field := range []string{"p50", "p90", "p99", "p999", "max"} {
		if v, ok := latency[field].(float64); !ok || v <= 0 {
			t.Errorf("latency_us.%s = %v, want a positive number", field, latency[field])
		}
	}
	sent, received := report["sent"].(float64), report["received"].(float64)
	// 10k packets/s for 200ms: at most 2000 packets (fewer if the machine is busy).
	if sent == 0 || sent > 2000 || received != sent || report["lost"].(float64) != 0 || report["corrupt"].(float64) != 0 {
		t.Errorf("sent %v, received %v, lost %v, corrupt %v: want up to 2000 sent, all received intact",
			sent, received, report["lost"], report["corrupt"])
	}
	if report["latency_valid"] != true || report["warnings"] != nil {
		t.Errorf("latency_valid %v, warnings %v: want valid latency without warnings on one host", report["latency_valid"], report["warnings"])
	}
	// Four intervals of 50ms that account for every packet.
	intervals, _ := report["intervals"].([]any)
	var intervalSent, intervalReceived float64
	for i, v := range intervals {
		iv, _ := v.(map[string]any)
		start, end := (time.Duration(i) * 50 * time.Millisecond).Seconds(), (time.Duration(i+1) * 50 * time.Millisecond).Seconds()
		if iv["start"] != start || iv["end"] != end {
			t.Errorf("interval %d spans %v-%v s, want %v-%v", i, iv["start"], iv["end"], start, end)
		}
		if _, ok := iv["jitter_us"].(float64); !ok {
			t.Errorf("interval %d: no jitter_us: %v", i, iv)
		}
		intervalSent += iv["sent"].(float64)
		intervalReceived += iv["received"].(float64)
	}
	if len(intervals) != 4 || intervalSent != sent || intervalReceived != received {
		t.Errorf("%d intervals with %v sent and %v received, want 4 with %v and %v", len(intervals), intervalSent, intervalReceived, sent, received)
	}
	// The receiver printed the same run, as JSON, when the sender closed it.
	var recvReport struct {
		Counts struct {
			Received float64 `json:"received"`
		} `json:"counts"`
	}
	if err := json.Unmarshal(recvOut.Bytes(), &recvReport); err != nil || recvReport.Counts.Received != received {
		t.Errorf("recv printed %q (%v), want a run with %v packets", recvOut.String(), err, received)
	}
}

func TestSweepCommand(t *testing.T) {
	addr, _ := startRecv(t)
	out := runUntilListening(t, "sweep", "-to", addr, "-size", "64,imix", "-duration", "100ms",
		"-drain", "20ms", "-trials", "3", "-max-loss", "1", "-json")
	var got struct {
		Sweep []struct {
			Size          string  `json:"size"`
			ThroughputPPS float64 `json:"throughput_pps"`
			Trials        []struct {
				Offered float64 `json:"pps_sent"`
				Pass    bool    `json:"pass"`
			} `json:"trials"`
		} `json:"sweep"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("sweep -json printed %q: %v", out, err)
	}
	if len(got.Sweep) != 2 || got.Sweep[0].Size != "64" || got.Sweep[1].Size != "imix" {
		t.Fatalf("sweep results %+v, want sizes 64 and imix", got.Sweep)
	}
	for _, s := range got.Sweep {
		if n := len(s.Trials); n < 1 || n > 3 || s.Trials[0].Offered <= 0 {
			t.Errorf("size %s: trials %+v, want 1 to 3 with traffic", s.Size, s.Trials)
		}
		passed := false
		for _, tr := range s.Trials {
			passed = passed || tr.Pass
		}
		if passed != (s.ThroughputPPS > 0) {
			t.Errorf("size %s: throughput %v with trials %+v", s.Size, s.ThroughputPPS, s.Trials)
		}
	}
}

func TestBadArguments(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{nil, "missing command"},
		{[]string{"fly"}, "unknown command"},
		{[]string{"recv"}, "-listen"},
		{[]string{"recv", "-listen", "127.0.0.1:1", "extra"}, "unexpected argument"},
		{[]string{"send", "-rate", "max", "-size", "64", "-duration", "1s"}, "-to"},
		{[]string{"send"}, "-to ADDR:PORT is required"},
		{[]string{"send", "-to", "nowhere", "-rate", "max", "-size", "64", "-duration", "1s"}, "-to"},
		{[]string{"send", "-to", "127.0.0.1:1", "-rate", "fast", "-size", "64", "-duration", "1s"}, "-rate"},
		{[]string{"send", "-to", "127.0.0.1:1", "-rate", "0", "-size", "64", "-duration", "1s"}, "-rate"},
		{[]string{"send", "-to", "127.0.0.1:1", "-rate", "1k", "-bitrate", "1M"}, "-rate and -bitrate both given"},
		{[]string{"send", "-to", "127.0.0.1:1", "-bitrate", "fast"}, "-bitrate"},
		{[]string{"send", "-to", "127.0.0.1:1", "-bitrate", "-1M"}, "-bitrate"},
		{[]string{"send", "-to", "127.0.0.1:1", "-rate", "max", "-size", "10", "-duration", "1s"}, "-size"},
		{[]string{"send", "-to", "127.0.0.1:1", "-duration", "0s"}, "-duration"},
		{[]string{"send", "-to", "127.0.0.1:1", "-interval", "-1s"}, "-interval"},
		{[]string{"send", "-to", "127.0.0.1:1", "-interval", "1us"}, "intervals"},
		{[]string{"recv", "-listen", "127.0.0.1:1", "-interval", "-1s"}, "-interval"},
		{[]string{"send", "-to", "127.0.0.1:1", "-rate", "max", "-size", "64", "-duration", "1s", "-flows", "0"}, "flows"},
		{[]string{"send", "-to", "127.0.0.1:1", "-rate", "max", "-size", "64", "-duration", "1s", "-gso", "-gso-segments", "1"}, "-gso-segments"},
		{[]string{"send", "-to", "127.0.0.1:1", "-rate", "max", "-size", "64", "-duration", "1s", "-bogus"}, "bogus"},
		{[]string{"sweep", "-to", "127.0.0.1:1", "-duration", "1s"}, "-size is required"},
		{[]string{"sweep", "-to", "127.0.0.1:1", "-size", "64"}, "-duration is required"},
		{[]string{"sweep", "-to", "127.0.0.1:1", "-duration", "1s", "-size", "64,x"}, "-size"},
	}
	for _, tt := range tests {
		var out, errOut bytes.Buffer
		err := run(context.Background(), tt.args, &out, &errOut)
		if err == nil || !strings.Contains(err.Error()+errOut.String(), tt.want) {
			t.Errorf("loadgen %q: error %v (stderr %q), want one mentioning %q", tt.args, err, errOut.String(), tt.want)
		}
	}
}

func TestParseRate(t *testing.T) {
	for arg, want := range map[string]float64{"max": 0, "100000": 1e5, "100k": 1e5, "2.5M": 2.5e6, "1": 1} {
		if got, err := parseRate(arg); err != nil || got != want {
			t.Errorf("parseRate(%q) = %v, %v; want %v", arg, got, err, want)
		}
	}
	for _, arg := range []string{"", "k", "0.5", "-3", "2G", "1e10"} {
		if _, err := parseRate(arg); err == nil {
			t.Errorf("parseRate(%q) succeeded", arg)
		}
	}
}

func TestParseBitrate(t *testing.T) {
	for arg, want := range map[string]float64{
		"0": 0, "max": 0, "1": 1, "1000": 1e3, "500K": 5e5, "500k": 5e5, "1M": 1e6, "1m": 1e6,
		"2.5G": 2.5e9, "2.5g": 2.5e9, "1T": 1e12, "0.5K": 500,
	} {
		if got, err := parseBitrate(arg); err != nil || got != want {
			t.Errorf("parseBitrate(%q) = %v, %v; want %v", arg, got, err, want)
		}
	}
	for _, arg := range []string{"", "M", "fast", "-1M", "0.5", "1Mi", "1KB", "inf", "NaN", "1e400"} {
		if _, err := parseBitrate(arg); err == nil {
			t.Errorf("parseBitrate(%q) succeeded", arg)
		}
	}
}

func TestSendRate(t *testing.T) {
	imix, err := payload.ParseSizes("imix", false)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		rate, bitrate string
		sizes         []int
		want          float64
	}{
		{"", "", []int{1250}, 100},                 // iperf3's default 1 Mbit/s: 10^6 / (1250·8)
		{"", "8M", []int{1000}, 1000},              // payload bits only: 8·10^6 / (1000·8)
		{"", "10M", imix, 1e7 / (3916.0 / 12 * 8)}, // imix at its mean payload: (7·36 + 4·548 + 1472)/12 bytes
		{"", "8M", []int{500, 1500}, 1000},         // a list at its mean of 1000 bytes
		{"", "0", []int{64}, 0},                    // iperf3's -b 0: unlimited
		{"2k", "", []int{64}, 2000},                // packets per second stay packets per second
		{"max", "", []int{64}, 0},
		{"", "1", []int{payload.MaxSize}, 1 / (8 * float64(payload.MaxSize))}, // below a packet per second
	}
	for _, tt := range tests {
		got, err := sendRate(tt.rate, tt.bitrate, tt.sizes)
		if err != nil || math.Abs(got-tt.want) > 1e-9*tt.want {
			t.Errorf("sendRate(%q, %q, %v) = %v, %v; want %v", tt.rate, tt.bitrate, tt.sizes, got, err, tt.want)
		}
	}
	if _, err := sendRate("1k", "1M", []int{64}); err == nil || !strings.Contains(err.Error(), "both") {
		t.Errorf("-rate with -bitrate: %v, want an error saying both were given", err)
	}
	if _, err := sendRate("", "1T", []int{64}); err == nil {
		t.Error("-bitrate 1T at 64 bytes (2e9 packets/s) accepted")
	}
}

// TestSendDefaults checks that -to is all send needs, and what the rest
// defaults to.
func TestSendDefaults(t *testing.T) {
	for _, tt := range []struct {
		to   string
		size int
	}{{"192.0.2.1:9000", 1472}, {"[2001:db8::1]:9000", 1452}} {
		opts, err := parseSend([]string{"-to", tt.to}, new(bytes.Buffer), new(bytes.Buffer))
		if err != nil {
			t.Fatalf("send -to %s: %v", tt.to, err)
		}
		cfg := opts.cfg
		if len(cfg.Sizes) != 1 || cfg.Sizes[0] != tt.size || opts.sizeSpec != fmt.Sprint(tt.size) {
			t.Errorf("-to %s: sizes %v (%q), want [%d]", tt.to, cfg.Sizes, opts.sizeSpec, tt.size)
		}
		if want := 1e6 / float64(8*tt.size); math.Abs(cfg.Rate-want) > 1e-9 {
			t.Errorf("-to %s: rate %v packets/s, want 1 Mbit/s = %v", tt.to, cfg.Rate, want)
		}
		if cfg.Duration != 10*time.Second || cfg.Interval != time.Second || cfg.Flows != 1 || opts.jsonOut {
			t.Errorf("-to %s: duration %v, interval %v, flows %d, json %v; want 10s, 1s, 1, false",
				tt.to, cfg.Duration, cfg.Interval, cfg.Flows, opts.jsonOut)
		}
	}
	opts, err := parseSend([]string{"-to", "192.0.2.1:9000", "-interval", "0"}, new(bytes.Buffer), new(bytes.Buffer))
	if err != nil || opts.cfg.Interval != 0 {
		t.Errorf("-interval 0: interval %v, %v; want none", opts.cfg.Interval, err)
	}
}

// TestHelp checks that -h and -help print the usage on stdout and exit 0,
// for the command and each subcommand, by running the command itself.
func TestHelp(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"-h"}, {"help"}, {"send", "-h"}, {"send", "-help"}, {"recv", "-h"}, {"sweep", "-help"}, {"send", "-to", "x:1", "-h"},
	} {
		cmd := exec.Command(exe, args...)
		cmd.Env = append(os.Environ(), runMainEnv+"=1")
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Errorf("loadgen %q: %v, want exit status 0; stderr %q", args, err, stderr.String())
		}
		want := "usage:"
		if len(args) > 1 {
			want = "usage: loadgen " + args[0]
		}
		if !strings.Contains(stdout.String(), want) || stderr.Len() != 0 {
			t.Errorf("loadgen %q printed stdout %q, stderr %q; want the usage on stdout", args, stdout.String(), stderr.String())
		}
	}
	// A bad flag still fails with status 2, the usage on stderr.
	cmd := exec.Command(exe, "send", "-bogus")
	cmd.Env = append(os.Environ(), runMainEnv+"=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	var exit *exec.ExitError
	if err := cmd.Run(); !errors.As(err, &exit) || exit.ExitCode() != 2 || !strings.Contains(stderr.String(), "usage: loadgen send") {
		t.Errorf("loadgen send -bogus: %v, stderr %q; want exit status 2 and the usage", err, stderr.String())
	}
}

func TestReceiverLine(t *testing.T) {
	const start = 5e9
	prev := control.Result{Run: 9, StartNanos: start, Bytes: 1000, Corrupt: 1,
		Counts: flow.Counts{Received: 10, Expected: 10}}
	cur := control.Result{Run: 9, StartNanos: start, Bytes: 1000 + 100*1250, Corrupt: 3, JitterNanos: 2500,
		Counts: flow.Counts{Received: 110, Expected: 114}}
	line := receiverLine(prev, start+2e9, cur, start+3e9)
	for _, want := range []string{"[run 9]", "2.00-3.00", "received 100 ", "1.00 Mbit/s", "missing 4", "corrupt 2", "jitter 2.5 µs"} {
		if !strings.Contains(line, want) {
			t.Errorf("receiver line %q lacks %q", line, want)
		}
	}
}

// TestReceiverWatch drives the receiver's period lines through a run: a
// line per whole period with arrivals, none for a quiet period or a
// repeated tick, a partial line when the run ends, nothing from a snapshot
// taken before the end, and a fresh count for the next run.
func TestReceiverWatch(t *testing.T) {
	var lines []string
	var mu sync.Mutex
	w := &receiverWatch{mu: &mu, period: time.Second, show: func(line string) { lines = append(lines, line) }}
	const start, sec = 7e9, 1e9
	snap := func(run uint32, start int64, received uint64) control.Result {
		return control.Result{Run: run, StartNanos: start, Bytes: received * 1000, Counts: flow.Counts{Received: received, Expected: received}}
	}
	if wait := w.tick(snap(1, start, 100), start+sec+1e5); wait != time.Second-100*time.Microsecond {
		t.Errorf("next tick in %v, want at the next whole second of the run", wait)
	}
	w.tick(snap(1, start, 100), start+1.5*sec) // the same period again
	w.tick(snap(1, start, 100), start+2*sec)   // a period without arrivals
	final := snap(1, start, 150)
	final.LastNanos = start + 2.5*sec
	mu.Lock()
	w.endLocked(final)
	mu.Unlock()
	w.tick(snap(1, start, 120), start+3*sec) // read before the run ended
	w.tick(snap(2, 20*sec, 10), 21*sec)
	want := []string{"[run 1]   0.00-1.00   s  received 100  800.00 Kbit/s", "[run 1]   2.00-2.50   s  received 50  800.00 Kbit/s",
		"[run 2]   0.00-1.00   s  received 10  80.00 Kbit/s"}
	if len(lines) != len(want) {
		t.Fatalf("lines %q, want %d", lines, len(want))
	}
	for i, line := range lines {
		if !strings.HasPrefix(line, want[i]) {
			t.Errorf("line %d: %q, want it to start with %q", i, line, want[i])
		}
	}
}
