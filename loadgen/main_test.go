package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"strings"
	"testing"
	"time"
)

// TestSendAndReceiveCommands runs "loadgen recv" and "loadgen send -json"
// in-process over loopback and checks the committed JSON fields.
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
		"-duration", "200ms", "-flows", "2", "-drain", "50ms", "-json")

	var report map[string]any
	if err := json.Unmarshal([]byte(sendOut), &report); err != nil {
		t.Fatalf("send -json printed %q: %v", sendOut, err)
	}
	for _, field := range []string{"sent", "received", "lost", "duplicates", "reordered", "pps_sent", "pps_received", "gbps_received", "latency_us"} {
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
		{[]string{"send", "-to", "nowhere", "-rate", "max", "-size", "64", "-duration", "1s"}, "-to"},
		{[]string{"send", "-to", "127.0.0.1:1", "-size", "64", "-duration", "1s"}, "-rate is required"},
		{[]string{"send", "-to", "127.0.0.1:1", "-rate", "fast", "-size", "64", "-duration", "1s"}, "-rate"},
		{[]string{"send", "-to", "127.0.0.1:1", "-rate", "0", "-size", "64", "-duration", "1s"}, "-rate"},
		{[]string{"send", "-to", "127.0.0.1:1", "-rate", "max", "-duration", "1s"}, "-size is required"},
		{[]string{"send", "-to", "127.0.0.1:1", "-rate", "max", "-size", "10", "-duration", "1s"}, "-size"},
		{[]string{"send", "-to", "127.0.0.1:1", "-rate", "max", "-size", "64"}, "-duration"},
		{[]string{"send", "-to", "127.0.0.1:1", "-rate", "max", "-size", "64", "-duration", "1s", "-flows", "0"}, "flows"},
		{[]string{"send", "-to", "127.0.0.1:1", "-rate", "max", "-size", "64", "-duration", "1s", "-gso", "-gso-segments", "1"}, "-gso-segments"},
		{[]string{"send", "-to", "127.0.0.1:1", "-rate", "max", "-size", "64", "-duration", "1s", "-bogus"}, "bogus"},
		{[]string{"sweep", "-to", "127.0.0.1:1", "-duration", "1s"}, "-size is required"},
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
