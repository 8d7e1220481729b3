// Package report turns a run's sender and receiver counts into the figures
// loadgen prints: offered and delivered rates, loss, duplicates, RFC 4737
// reordering, corruption, latency percentiles and CPU time, as text or as
// JSON with field names that scripts and the netns tests rely on.
package report

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/wirebatch/wirebatch/loadgen/internal/control"
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
	// What was asked for.
	Size         string  `json:"size"`
	RateAsked    float64 `json:"pps_requested"` // 0: as fast as possible
	Flows        int     `json:"flows"`
	DurationSecs float64 `json:"duration_s"`
	Batch        int     `json:"batch"`
	GSOSegments  int     `json:"gso_segments"`
	ReceiverGRO  bool    `json:"receiver_gro"`

	Sent       uint64  `json:"sent"`
	Received   uint64  `json:"received"`
	Lost       uint64  `json:"lost"`
	LostPct    float64 `json:"lost_percent"`
	Duplicates uint64  `json:"duplicates"`
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

	LatencyUS Latency `json:"latency_us"`

	CPUSenderSecs   float64 `json:"cpu_sender_s"`
	CPUReceiverSecs float64 `json:"cpu_receiver_s"`
}

// New computes the report of one run. sizeSpec is the -size argument as given.
func New(cfg sender.Config, sizeSpec string, res sender.Result) Report {
	rc := res.Receiver
	r := Report{
		Size:         sizeSpec,
		RateAsked:    cfg.Rate,
		Flows:        cfg.Flows,
		DurationSecs: cfg.Duration.Seconds(),
		Batch:        cfg.Batch,
		GSOSegments:  cfg.GSOSegments,
		ReceiverGRO:  rc.GRO,

		Sent:             res.Sent,
		Received:         rc.Counts.Received,
		Duplicates:       rc.Counts.Duplicates,
		Reordered:        rc.Counts.Reordered,
		ReorderExtentMax: rc.Counts.MaxReorderExtent,
		Corrupt:          rc.Corrupt,
		Stray:            rc.Stray,

		LatencyUS:       microseconds(rc.Latency),
		CPUSenderSecs:   time.Duration(res.CPUNanos).Seconds(),
		CPUReceiverSecs: time.Duration(rc.CPUNanos).Seconds(),
	}
	if res.Sent > r.Received {
		r.Lost = res.Sent - r.Received
	}
	if res.Sent > 0 {
		r.LostPct = 100 * float64(r.Lost) / float64(res.Sent)
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
	var b strings.Builder
	fmt.Fprintf(&b, "loadgen: size %s, rate %s packets/s, %d flow(s), %gs (batch %d, gso %s, receiver gro %v)\n",
		r.Size, rate, r.Flows, r.DurationSecs, r.Batch, gso, r.ReceiverGRO)
	fmt.Fprintf(&b, "  offered    %12.0f packets/s  %8.3f Gbit/s  (%d sent)\n", r.PPSSent, r.GbpsSent, r.Sent)
	fmt.Fprintf(&b, "  delivered  %12.0f packets/s  %8.3f Gbit/s  (%d received)\n", r.PPSReceived, r.GbpsReceived, r.Received)
	fmt.Fprintf(&b, "  lost %d (%.4f%%), duplicates %d, reordered %d (ratio %.6f, max extent %d), corrupt %d, stray %d\n",
		r.Lost, r.LostPct, r.Duplicates, r.Reordered, r.ReorderedRatio, r.ReorderExtentMax, r.Corrupt, r.Stray)
	l := r.LatencyUS
	fmt.Fprintf(&b, "  latency µs p50 %.1f  p90 %.1f  p99 %.1f  p99.9 %.1f  max %.1f\n", l.P50, l.P90, l.P99, l.P999, l.Max)
	fmt.Fprintf(&b, "  cpu        sender %.2fs  receiver %.2fs\n", r.CPUSenderSecs, r.CPUReceiverSecs)
	_, err := io.WriteString(w, b.String())
	return err
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
