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
func TestSendAndReceiveCommands(t *testing.T) {
	// Find a port free for UDP and TCP alike.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()

	ctx, cancel := context.WithCancel(context.Background())
	var recvOut, recvErr bytes.Buffer
	recvDone := make(chan error)
	go func() {
		recvDone <- run(ctx, []string{"recv", "-listen", addr, "-json", "-sockbuf", "4194304"}, &recvOut, &recvErr)
	}()
	var sendOut, sendErr bytes.Buffer
	var err2 error
	// The receiver needs a moment to listen; the sender's dial fails until then.
	for range 50 {
		sendOut.Reset()
		err2 = run(context.Background(), []string{"send", "-to", addr, "-rate", "10k", "-size", "64,1400",
			"-duration", "200ms", "-flows", "2", "-drain", "50ms", "-json"}, &sendOut, &sendErr)
		if err2 == nil || !strings.Contains(err2.Error(), "refused") {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	if err := <-recvDone; err != nil {
		t.Errorf("recv: %v\n%s", err, recvErr.String())
	}
	if err2 != nil {
		t.Fatalf("send: %v\n%s", err2, sendErr.String())
	}

	var report map[string]any
	if err := json.Unmarshal(sendOut.Bytes(), &report); err != nil {
		t.Fatalf("send -json printed %q: %v", sendOut.String(), err)
	}
	for _, field := range []string{"sent", "received", "lost", "duplicates", "reordered", "pps_sent", "pps_received", "gbps_received", "latency_us"} {
		if _, ok := report[field]; !ok {
			t.Errorf("JSON report lacks %q: %s", field, sendOut.String())
		}
	}
	latency, _ := report["latency_us"].(map[string]any)
	for _, field := range []string{"p50", "p90", "p99", "p999", "max"} {
		if v, ok := latency[field].(float64); !ok || v <= 0 {
			t.Errorf("latency_us.%s = %v, want a positive number", field, latency[field])
		}
	}
	sent, received := report["sent"].(float64), report["received"].(float64)
	if sent < 1000 || sent > 2000 || received != sent || report["lost"].(float64) != 0 || report["corrupt"].(float64) != 0 {
		t.Errorf("sent %v, received %v, lost %v, corrupt %v: want about 2000 sent, all received intact",
			sent, received, report["lost"], report["corrupt"])
	}
	// The receiver printed the same run, as JSON.
	var recvReport struct {
		Counts struct {
			Received float64 `json:"received"`
		} `json:"counts"`
	}
	if err := json.Unmarshal(recvOut.Bytes(), &recvReport); err != nil || recvReport.Counts.Received != received {
		t.Errorf("recv printed %q (%v), want a run with %v packets", recvOut.String(), err, received)
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
