// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package report

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/wirebatch/wirebatch/loadgen/internal/control"
	"github.com/wirebatch/wirebatch/loadgen/internal/flow"
	"github.com/wirebatch/wirebatch/loadgen/internal/sender"
)

func sampleRun() (sender.Config, sender.Result) {
	cfg := sender.Config{Rate: 1000, Sizes: []int{100}, Flows: 2, Duration: 2 * time.Second, Interval: time.Second, Batch: 64, GSOSegments: 0}
	res := sender.Result{
		Sent: 2000, Bytes: 2000 * 100,
		StartNanos: 1e9, EndNanos: 3e9, // 2s of sending
		CPUNanos: 5e8,
		Receiver: control.Result{
			Counts:  flow.Counts{Received: 1901, Duplicates: 3, Reordered: 19, MaxReorderExtent: 4, Expected: 2000},
			Corrupt: 2, Stray: 1, Bytes: 1901 * 100,
			FirstNanos: 1e9, LastNanos: 2.9e9, // 1900 gaps in 1.9s
			Latency:     control.Latency{P50: 10_000, P90: 20_000, P99: 30_000, P999: 40_000, Max: 50_000},
			JitterNanos: 1500,
			CPUNanos:    25e7, GRO: true,
		},
		SameClock: true,
		Intervals: []sender.Interval{
			{Start: 0, End: time.Second, Sent: 1000, Bytes: 1000 * 100,
				Receiver: control.Interval{Received: 950, Bytes: 950 * 100, Duplicates: 1, Reordered: 9, JitterNanos: 1200}},
			{Start: time.Second, End: 2 * time.Second, Sent: 1000, Bytes: 1000 * 100,
				Receiver: control.Interval{Received: 951, Bytes: 951 * 100, Duplicates: 2, Reordered: 10, JitterNanos: 1500}},
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
	if !near(r.BitrateAsked, 1000*100*8) || r.IntervalSecs != 1 || !near(r.JitterUS, 1.5) {
		t.Errorf("bitrate asked %v, interval %v s, jitter %v µs; want 800000, 1, 1.5", r.BitrateAsked, r.IntervalSecs, r.JitterUS)
	}
	if !r.LatencyValid || r.Warnings != nil {
		t.Errorf("latency valid %v, warnings %q: want valid, none", r.LatencyValid, r.Warnings)
	}
	want := []Interval{
		{StartSecs: 0, EndSecs: 1, Losses: Losses{Sent: 1000, Received: 950, Lost: 50, LostPct: 5, Duplicates: 1}, Reordered: 9,
			PPSSent: 1000, PPSReceived: 950, GbpsSent: 1000 * 100 * 8 / 1e9, GbpsReceived: 950 * 100 * 8 / 1e9, JitterUS: 1.2},
		{StartSecs: 1, EndSecs: 2, Losses: Losses{Sent: 1000, Received: 951, Lost: 49, LostPct: 4.9, Duplicates: 2}, Reordered: 10,
			PPSSent: 1000, PPSReceived: 951, GbpsSent: 1000 * 100 * 8 / 1e9, GbpsReceived: 951 * 100 * 8 / 1e9, JitterUS: 1.5},
	}
	if len(r.Intervals) != len(want) {
		t.Fatalf("intervals %+v, want %d", r.Intervals, len(want))
	}
	for k, iv := range r.Intervals {
		w := want[k]
		if iv.StartSecs != w.StartSecs || iv.EndSecs != w.EndSecs || iv.Sent != w.Sent || iv.Received != w.Received ||
			iv.Lost != w.Lost || !near(iv.LostPct, w.LostPct) || iv.Duplicates != w.Duplicates || iv.Reordered != w.Reordered ||
			!near(iv.PPSSent, w.PPSSent) || !near(iv.PPSReceived, w.PPSReceived) || !near(iv.GbpsSent, w.GbpsSent) ||
			!near(iv.GbpsReceived, w.GbpsReceived) || !near(iv.JitterUS, w.JitterUS) {
			t.Errorf("interval %d: %+v, want %+v", k, iv, w)
		}
	}
}

// TestShortLastInterval: rates of an interval cut short by the end of the
// run are over its own length.
func TestShortLastInterval(t *testing.T) {
	iv := NewInterval(sender.Interval{Start: 2 * time.Second, End: 2500 * time.Millisecond, Sent: 100, Bytes: 100 * 1250,
		Receiver: control.Interval{Received: 101, Bytes: 101 * 1250}})
	if !near(iv.PPSSent, 200) || !near(iv.GbpsReceived, 101*1250*8*2/1e9) || iv.Lost != 0 || iv.LostPct != 0 {
		t.Errorf("interval %+v: want 200 packets/s sent, none lost", iv)
	}
}

// TestLatencyValidity checks the two ways a report learns that the ends'
// clocks differ, and that it says so.
func TestLatencyValidity(t *testing.T) {
	cfg, res := sampleRun()
	res.SameClock, res.ClockOffset = false, -3*time.Hour
	r := New(cfg, "100", res)
	if r.LatencyValid || len(r.Warnings) != 1 || !strings.Contains(r.Warnings[0], "3h0m0s apart") {
		t.Errorf("different clocks: latency valid %v, warnings %q; want invalid and a warning with the offset", r.LatencyValid, r.Warnings)
	}
	cfg, res = sampleRun()
	res.Receiver.LatencyOutOfRange = 7
	r = New(cfg, "100", res)
	if r.LatencyValid || r.LatencyOutOfRange != 7 || len(r.Warnings) != 1 || !strings.Contains(r.Warnings[0], "7 packets") {
		t.Errorf("latencies out of range: valid %v, count %d, warnings %q; want invalid, 7 and a warning",
			r.LatencyValid, r.LatencyOutOfRange, r.Warnings)
	}
	var buf bytes.Buffer
	if err := r.WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "not valid") {
		t.Errorf("text report does not mark invalid latency:\n%s", buf.String())
	}
}

func TestBitrate(t *testing.T) {
	for bps, want := range map[float64]string{
		0: "0 bit/s", 999: "999 bit/s", 1000: "1.00 Kbit/s", 1e6: "1.00 Mbit/s", 2.5e9: "2.50 Gbit/s", 123.456e6: "123.46 Mbit/s",
	} {
		if got := Bitrate(bps); got != want {
			t.Errorf("Bitrate(%v) = %q, want %q", bps, got, want)
		}
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
	for _, f := range []string{"sent", "received", "lost", "duplicates", "reordered", "pps_sent", "pps_received", "gbps_received", "latency_us",
		"jitter_us", "latency_valid", "intervals"} {
		if _, ok := m[f]; !ok {
			t.Errorf("JSON lacks %q", f)
		}
	}
	intervals, _ := m["intervals"].([]any)
	first, _ := intervals[0].(map[string]any)
	for _, f := range []string{"start", "end", "sent", "received", "lost", "lost_percent", "pps_sent", "pps_received", "gbps_sent", "gbps_received", "jitter_us"} {
		if _, ok := first[f]; !ok {
			t.Errorf("JSON intervals lack %q", f)
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
	for _, want := range []string{"rate 1000 packets/s (800.00 Kbit/s)", "(2000 sent)", "(1901 received)", "lost 99 (4.9500%)", "corrupt 2",
		"jitter     1.5 µs", "p99.9 40.0", "sender 0.50s"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("text report lacks %q:\n%s", want, buf.String())
		}
	}
}

func TestIntervalLine(t *testing.T) {
	cfg, res := sampleRun()
	line := New(cfg, "100", res).Intervals[1].Line()
	fields := strings.Fields(line)
	want := []string{"1.00-2.00", "1000", "800.00", "Kbit/s", "951", "760.80", "Kbit/s", "49", "4.9", "1.5"}
	if strings.Join(fields, " ") != strings.Join(want, " ") {
		t.Errorf("interval line %q, want the fields %q", line, want)
	}
	if utf8.RuneCountInString(line) != utf8.RuneCountInString(IntervalHeader) {
		t.Errorf("interval line %q is not as wide as its header %q", line, IntervalHeader)
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
