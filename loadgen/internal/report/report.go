// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

// Package report turns a run's sender and receiver counts into the figures
// loadgen prints: offered and delivered rates, loss, duplicates, RFC 4737
// reordering, corruption, RFC 3550 jitter, latency percentiles and CPU time,
// in total and per interval, as text or as JSON with field names that
// scripts and the netns tests rely on (docs/loadgen.md lists them).
package report

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/wirebatch/wirebatch/loadgen/internal/control"
	"github.com/wirebatch/wirebatch/loadgen/internal/payload"
	"github.com/wirebatch/wirebatch/loadgen/internal/sender"
)

// Latency is a latency summary in microseconds.
type Latency struct {
	P50  float64 `json:"p50"`
	P90  float64 `json:"p90"`
	P99  float64 `json:"p99"`
	P999 float64 `json:"p999"`
	Max  float64 `json:"max"`
}

// Report is the outcome of one send run. The JSON names of Sent, Received,
// Lost, Duplicates, Reordered, PPSSent, PPSReceived, GbpsReceived and
// LatencyUS are a committed interface (DESIGN.md); add fields, never rename.
type Report struct {
	// What was asked for. BitrateAsked is RateAsked in UDP payload bits/s
	// at the schedule's mean payload size; both are 0 for as fast as
	// possible.
	Size         string  `json:"size"`
	RateAsked    float64 `json:"pps_requested"`
	BitrateAsked float64 `json:"bitrate_requested"`
	Flows        int     `json:"flows"`
	DurationSecs float64 `json:"duration_s"`
	IntervalSecs float64 `json:"interval_s"` // 0: no intervals
	Batch        int     `json:"batch"`
	GSOSegments  int     `json:"gso_segments"`
	ReceiverGRO  bool    `json:"receiver_gro"`

	Losses
	// Reordered counts reordered packets and ReorderedRatio is their share
	// of the received ones (RFC 4737 sections 3.3 and 4.1.3);
	// ReorderExtentMax is the largest reordering extent (section 4.2.1).
	Reordered        uint64  `json:"reordered"`
	ReorderedRatio   float64 `json:"reordered_ratio"`
	ReorderExtentMax uint64  `json:"reorder_extent_max"`
	Corrupt          uint64  `json:"corrupt"`
	// Stray counts packets of other runs that reached the receiver meanwhile.
	Stray uint64 `json:"stray"`

	// Offered rates use the sender's sending time; delivered rates the
	// receiver's, from the first to the last arrival. Gbit/s count UDP
	// payload bits, as iperf3 does.
	PPSSent      float64 `json:"pps_sent"`
	PPSReceived  float64 `json:"pps_received"`
	GbpsSent     float64 `json:"gbps_sent"`
	GbpsReceived float64 `json:"gbps_received"`

	// JitterUS is the RFC 3550 interarrival jitter, the mean over flows.
	JitterUS float64 `json:"jitter_us"`

	// LatencyUS is one-way latency, meaningful only when LatencyValid: the
	// two ends shared a clock. LatencyOutOfRange counts packets whose
	// latency was negative or above a minute (package receiver).
	LatencyUS         Latency `json:"latency_us"`
	LatencyValid      bool    `json:"latency_valid"`
	LatencyOutOfRange uint64  `json:"latency_out_of_range"`

	CPUSenderSecs   float64 `json:"cpu_sender_s"`
	CPUReceiverSecs float64 `json:"cpu_receiver_s"`

	// Warnings say why a figure can not be trusted.
	Warnings []string `json:"warnings,omitempty"`

	// Intervals is the run's time series, when -interval asked for one.
	Intervals []Interval `json:"intervals,omitempty"`
}

// Interval is one interval of a run. Its packets are those sent in it, by
// their send stamps, and the rates are their counts over the interval's
// length: received figures say what became of the interval's packets, so
// Lost compares like with like.
type Interval struct {
	StartSecs float64 `json:"start"` // after the start of the measured period
	EndSecs   float64 `json:"end"`
	Losses
	Reordered    uint64  `json:"reordered"`
	PPSSent      float64 `json:"pps_sent"`
	PPSReceived  float64 `json:"pps_received"`
	GbpsSent     float64 `json:"gbps_sent"`
	GbpsReceived float64 `json:"gbps_received"`
	// JitterUS is the jitter estimate after the interval's last packet arrived.
	JitterUS float64 `json:"jitter_us"`
}

// NewInterval computes the figures of one interval.
func NewInterval(iv sender.Interval) Interval {
	rc := iv.Receiver
	r := Interval{
		StartSecs: iv.Start.Seconds(), EndSecs: iv.End.Seconds(),
		Losses:    newLosses(iv.Sent, rc.Received, rc.Duplicates),
		Reordered: rc.Reordered,
		JitterUS:  rc.JitterNanos / 1e3,
	}
	if span := (iv.End - iv.Start).Seconds(); span > 0 {
		r.PPSSent = float64(iv.Sent) / span
		r.PPSReceived = float64(rc.Received) / span
		r.GbpsSent = float64(iv.Bytes) * 8 / span / 1e9
		r.GbpsReceived = float64(rc.Bytes) * 8 / span / 1e9
	}
	return r
}

// Losses are what became of the packets sent, in a run or in one interval of it: Lost is Sent less
// Received (never below zero: duplicates are counted apart) and LostPct its share of Sent.
type Losses struct {
	Sent       uint64  `json:"sent"`
	Received   uint64  `json:"received"`
	Lost       uint64  `json:"lost"`
	LostPct    float64 `json:"lost_percent"`
	Duplicates uint64  `json:"duplicates"`
}

func newLosses(sent, received, duplicates uint64) Losses {
	l := Losses{Sent: sent, Received: received, Duplicates: duplicates}
	if sent > received {
		l.Lost = sent - received
	}
	if sent > 0 {
		l.LostPct = 100 * float64(l.Lost) / float64(sent)
	}
	return l
}

// New computes the report of one run. sizeSpec is the -size argument as given.
func New(cfg sender.Config, sizeSpec string, res sender.Result) Report {
	rc := res.Receiver
	r := Report{
		Size:         sizeSpec,
		RateAsked:    cfg.Rate,
		BitrateAsked: cfg.Rate * payload.MeanSize(cfg.Sizes) * 8,
		Flows:        cfg.Flows,
		DurationSecs: cfg.Duration.Seconds(),
		IntervalSecs: cfg.Interval.Seconds(),
		Batch:        cfg.Batch,
		GSOSegments:  cfg.GSOSegments,
		ReceiverGRO:  rc.GRO,

		Losses:           newLosses(res.Sent, rc.Counts.Received, rc.Counts.Duplicates),
		Reordered:        rc.Counts.Reordered,
		ReorderExtentMax: rc.Counts.MaxReorderExtent,
		Corrupt:          rc.Corrupt,
		Stray:            rc.Stray,

		JitterUS:          rc.JitterNanos / 1e3,
		LatencyUS:         microseconds(rc.Latency),
		LatencyValid:      res.SameClock && rc.LatencyOutOfRange == 0,
		LatencyOutOfRange: rc.LatencyOutOfRange,
		CPUSenderSecs:     time.Duration(res.CPUNanos).Seconds(),
		CPUReceiverSecs:   time.Duration(rc.CPUNanos).Seconds(),
	}
	switch {
	case !res.SameClock:
		r.Warnings = append(r.Warnings, fmt.Sprintf("the receiver's clock is not the sender's (it reads about %v apart): "+
			"one-way latency can not be measured between them; jitter, loss and rates do not depend on it",
			res.ClockOffset.Abs().Round(time.Microsecond)))
	case rc.LatencyOutOfRange > 0:
		r.Warnings = append(r.Warnings, fmt.Sprintf("%d packets arrived before they were sent or over a minute later "+
			"by the receiver's clock: the latency figures are not valid", rc.LatencyOutOfRange))
	}
	for _, iv := range res.Intervals {
		r.Intervals = append(r.Intervals, NewInterval(iv))
	}
	if r.Received > 0 {
		r.ReorderedRatio = float64(r.Reordered) / float64(r.Received)
	}
	if span := time.Duration(res.EndNanos - res.StartNanos).Seconds(); span > 0 {
		r.PPSSent = float64(res.Sent) / span
		r.GbpsSent = float64(res.Bytes) * 8 / span / 1e9
	}
	// N arrivals span N-1 inter-arrival gaps.
	if span := time.Duration(rc.LastNanos - rc.FirstNanos).Seconds(); span > 0 && r.Received > 1 {
		r.PPSReceived = float64(r.Received-1) / span
		r.GbpsReceived = float64(rc.Bytes) * 8 / span / 1e9
	}
	return r
}

func microseconds(l control.Latency) Latency {
	us := func(ns int64) float64 { return float64(ns) / 1e3 }
	return Latency{P50: us(l.P50), P90: us(l.P90), P99: us(l.P99), P999: us(l.P999), Max: us(l.Max)}
}

// WriteJSON writes r as one JSON object on a line.
func (r Report) WriteJSON(w io.Writer) error {
	return json.NewEncoder(w).Encode(r)
}

// WriteText writes r for people.
func (r Report) WriteText(w io.Writer) error {
	rate := "max"
	if r.RateAsked > 0 {
		rate = fmt.Sprintf("%.0f", r.RateAsked)
	}
	gso := "off"
	if r.GSOSegments > 1 {
		gso = fmt.Sprint(r.GSOSegments, " segments")
	}
	rate += " packets/s"
	if r.BitrateAsked > 0 {
		rate += " (" + Bitrate(r.BitrateAsked) + ")"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "loadgen: size %s, rate %s, %d flow(s), %gs (batch %d, gso %s, receiver gro %v)\n",
		r.Size, rate, r.Flows, r.DurationSecs, r.Batch, gso, r.ReceiverGRO)
	fmt.Fprintf(&b, "  offered    %12.0f packets/s  %14s  (%d sent)\n", r.PPSSent, Bitrate(r.GbpsSent*1e9), r.Sent)
	fmt.Fprintf(&b, "  delivered  %12.0f packets/s  %14s  (%d received)\n", r.PPSReceived, Bitrate(r.GbpsReceived*1e9), r.Received)
	fmt.Fprintf(&b, "  lost %d (%.4f%%), duplicates %d, reordered %d (ratio %.6f, max extent %d), corrupt %d, stray %d\n",
		r.Lost, r.LostPct, r.Duplicates, r.Reordered, r.ReorderedRatio, r.ReorderExtentMax, r.Corrupt, r.Stray)
	fmt.Fprintf(&b, "  jitter     %.1f µs\n", r.JitterUS)
	l := r.LatencyUS
	validity := ""
	if !r.LatencyValid {
		validity = " (not valid: see the warning)"
	}
	fmt.Fprintf(&b, "  latency µs p50 %.1f  p90 %.1f  p99 %.1f  p99.9 %.1f  max %.1f%s\n", l.P50, l.P90, l.P99, l.P999, l.Max, validity)
	fmt.Fprintf(&b, "  cpu        sender %.2fs  receiver %.2fs\n", r.CPUSenderSecs, r.CPUReceiverSecs)
	_, err := io.WriteString(w, b.String())
	return err
}

// intervalColumns lays out IntervalHeader and Interval.Line.
const intervalColumns = "  %-13s %10v %14v %10v %14v %8v %7v %10v"

// IntervalHeader heads the lines of Interval.Line.
var IntervalHeader = fmt.Sprintf(intervalColumns, "interval s", "sent", "bit rate", "received", "bit rate", "lost", "lost %", "jitter µs")

// Line formats the interval for people, in the columns of IntervalHeader.
func (iv Interval) Line() string {
	return fmt.Sprintf(intervalColumns, fmt.Sprintf("%.2f-%.2f", iv.StartSecs, iv.EndSecs),
		iv.Sent, Bitrate(iv.GbpsSent*1e9), iv.Received, Bitrate(iv.GbpsReceived*1e9),
		iv.Lost, fmt.Sprintf("%.3g", iv.LostPct), fmt.Sprintf("%.1f", iv.JitterUS))
}

// Bitrate formats bits/s with a decimal prefix, as iperf3 does for rates.
func Bitrate(bps float64) string {
	switch {
	case bps >= 1e9:
		return fmt.Sprintf("%.2f Gbit/s", bps/1e9)
	case bps >= 1e6:
		return fmt.Sprintf("%.2f Mbit/s", bps/1e6)
	case bps >= 1e3:
		return fmt.Sprintf("%.2f Kbit/s", bps/1e3)
	}
	return fmt.Sprintf("%.0f bit/s", bps)
}

// Progress formats the one-line progress display: rates since the previous
// line, from successive snapshots.
type Progress struct {
	last sender.Progress
}

// Line returns the progress line for p, without a line ending.
func (pr *Progress) Line(p sender.Progress) string {
	dt := (p.Elapsed - pr.last.Elapsed).Seconds()
	sentRate, recvRate := 0.0, 0.0
	if dt > 0 {
		sentRate = float64(p.Sent-min(p.Sent, pr.last.Sent)) / dt
		recvRate = float64(p.Receiver.Counts.Received-min(p.Receiver.Counts.Received, pr.last.Receiver.Counts.Received)) / dt
	}
	pr.last = p
	return fmt.Sprintf("%5.0fs  sent %9.0f pps  received %9.0f pps  missing %d  corrupt %d  p99 %.1f µs",
		p.Elapsed.Seconds(), sentRate, recvRate, p.Receiver.Counts.Missing(), p.Receiver.Corrupt,
		float64(p.Receiver.Latency.P99)/1e3)
}
