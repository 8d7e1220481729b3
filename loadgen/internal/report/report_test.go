package report

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/wirebatch/wirebatch/loadgen/internal/control"
	"github.com/wirebatch/wirebatch/loadgen/internal/flow"
	"github.com/wirebatch/wirebatch/loadgen/internal/sender"
)

func sampleRun() (sender.Config, sender.Result) {
	cfg := sender.Config{Rate: 1000, Flows: 2, Duration: 2 * time.Second, Batch: 64, GSOSegments: 0}
	res := sender.Result{
		Sent: 2000, Bytes: 2000 * 100,
		StartNanos: 1e9, EndNanos: 3e9, // 2s of sending
		CPUNanos: 5e8,
		Receiver: control.Result{
			Counts:  flow.Counts{Received: 1901, Duplicates: 3, Reordered: 19, MaxReorderExtent: 4, Expected: 2000},
			Corrupt: 2, Stray: 1, Bytes: 1901 * 100,
			FirstNanos: 1e9, LastNanos: 2.9e9, // 1900 gaps in 1.9s
			Latency:  control.Latency{P50: 10_000, P90: 20_000, P99: 30_000, P999: 40_000, Max: 50_000},
			CPUNanos: 25e7, GRO: true,
		},
	}
	return cfg, res
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

func TestNew(t *testing.T) {
	cfg, res := sampleRun()
	r := New(cfg, "100", res)
	if r.Sent != 2000 || r.Received != 1901 || r.Lost != 99 || !near(r.LostPct, 4.95) {
		t.Errorf("sent/received/lost = %d/%d/%d (%.2f%%), want 2000/1901/99 (4.95%%)", r.Sent, r.Received, r.Lost, r.LostPct)
	}
	if r.Duplicates != 3 || r.Reordered != 19 || !near(r.ReorderedRatio, 19.0/1901) || r.ReorderExtentMax != 4 || r.Corrupt != 2 || r.Stray != 1 {
		t.Errorf("report %+v: wrong duplicate, reorder, corrupt or stray figures", r)
	}
	if !near(r.PPSSent, 1000) || !near(r.GbpsSent, 1000*100*8/1e9) {
		t.Errorf("offered %v pps, %v Gbit/s; want 1000 and 0.0008", r.PPSSent, r.GbpsSent)
	}
	if !near(r.PPSReceived, 1000) || !near(r.GbpsReceived, 1901*100*8/1.9/1e9) {
		t.Errorf("delivered %v pps, %v Gbit/s; want 1000 and %v", r.PPSReceived, r.GbpsReceived, 1901*100*8/1.9/1e9)
	}
	if r.LatencyUS != (Latency{P50: 10, P90: 20, P99: 30, P999: 40, Max: 50}) {
		t.Errorf("latency %+v µs", r.LatencyUS)
	}
	if !near(r.CPUSenderSecs, 0.5) || !near(r.CPUReceiverSecs, 0.25) || !r.ReceiverGRO || r.Size != "100" || r.Flows != 2 {
		t.Errorf("report %+v: wrong cpu or configuration fields", r)
	}
}

func TestNewWithNothingReceived(t *testing.T) {
	cfg, res := sampleRun()
	res.Receiver = control.Result{}
	r := New(cfg, "100", res)
	if r.Lost != 2000 || r.LostPct != 100 || r.PPSReceived != 0 || r.ReorderedRatio != 0 {
		t.Errorf("report %+v: want everything lost and no rates", r)
	}
}

// TestJSONFieldNames pins the names DESIGN.md commits to.
func TestJSONFieldNames(t *testing.T) {
	cfg, res := sampleRun()
	var buf bytes.Buffer
	if err := New(cfg, "100", res).WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(buf.Bytes(), &m); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"sent", "received", "lost", "duplicates", "reordered", "pps_sent", "pps_received", "gbps_received", "latency_us"} {
		if _, ok := m[f]; !ok {
			t.Errorf("JSON lacks %q", f)
		}
	}
	lat, _ := m["latency_us"].(map[string]any)
	for _, f := range []string{"p50", "p90", "p99", "p999", "max"} {
		if _, ok := lat[f]; !ok {
			t.Errorf("JSON latency_us lacks %q", f)
		}
	}
}

func TestWriteText(t *testing.T) {
	cfg, res := sampleRun()
	var buf bytes.Buffer
	if err := New(cfg, "100", res).WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"rate 1000 packets/s", "(2000 sent)", "(1901 received)", "lost 99 (4.9500%)", "corrupt 2", "p99.9 40.0", "sender 0.50s"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("text report lacks %q:\n%s", want, buf.String())
		}
	}
}

func TestProgressLine(t *testing.T) {
	var pr Progress
	snap := func(sec int, sent, received uint64) sender.Progress {
		return sender.Progress{Elapsed: time.Duration(sec) * time.Second, Sent: sent,
			Receiver: control.Result{Counts: flow.Counts{Received: received, Expected: received + 5}}}
	}
	pr.Line(snap(1, 1000, 900))
	line := pr.Line(snap(3, 5000, 4900))
	for _, want := range []string{"3s", "sent      2000 pps", "received      2000 pps", "missing 5"} {
		if !strings.Contains(line, want) {
			t.Errorf("progress line %q lacks %q", line, want)
		}
	}
}
