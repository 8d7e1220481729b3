// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

// Command benchtable turns the kernels benchmarks into a comparison table. It reads `go test -bench`
// output on stdin, echoes it unchanged (so the raw lines stay usable by benchstat), then prints one
// table per suite, workload and direction: each tier's ns/packet, GB/s and speed-up over the
// per-packet baseline, as medians over the -count runs.
//
//	go test -run '^$' -bench . -count 5 ./kernels/ | go run ./internal/benchtable
//
// It understands benchmark names of the form Benchmark{Seal,Open}/<suite>/<workload>/<tier>, where
// the tier "baseline" is the reference (see kernels/bench_test.go). Every other benchmark that times
// the default path alternately with its baseline (internal/benchshape's Paired: the metric
// vs-baseline, or forced-vs-baseline for a path forced for a measurement) goes into a second
// summary of other shapes; other lines are only echoed. Both summaries flag the default path's rows
// below 1.00x.
package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/wirebatch/wirebatch/internal/benchshape"
)

func main() {
	if err := run(os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "benchtable:", err)
		os.Exit(1)
	}
}

// baseline is the tier name of the per-packet reference implementation.
const baseline = "baseline"

// resultLine matches a benchmark result: name, iterations, then value/unit pairs.
var resultLine = regexp.MustCompile(`^Benchmark(\S+)\s+\d+\s+(.+)$`)

// procsSuffix is the -GOMAXPROCS suffix the testing package appends to a benchmark's name.
var procsSuffix = regexp.MustCompile(`-\d+$`)

// group identifies one table; row one line of it.
type group struct{ suite, workload, dir string }

// samples are the measurements of one benchmark (a tier in a group, or a paired row), one value
// per run.
type samples struct {
	nsPerPkt, baseNsPerPkt, mbPerSec []float64
	vsBaseline                       []float64 // the ratio to a baseline measured alternately
	forced                           bool      // the ratio is of a path forced for a measurement
}

// record adds a result's value v of unit; other units are ignored.
func (s *samples) record(unit string, v float64) {
	switch unit {
	case "ns/pkt":
		s.nsPerPkt = append(s.nsPerPkt, v)
	case "baseline-ns/pkt":
		s.baseNsPerPkt = append(s.baseNsPerPkt, v)
	case "MB/s":
		s.mbPerSec = append(s.mbPerSec, v)
	case benchshape.RatioUnit:
		s.vsBaseline = append(s.vsBaseline, v)
	case benchshape.ForcedRatioUnit:
		s.vsBaseline, s.forced = append(s.vsBaseline, v), true
	}
}

// merge appends o's values to s's.
func (s *samples) merge(o *samples) {
	s.nsPerPkt = append(s.nsPerPkt, o.nsPerPkt...)
	s.baseNsPerPkt = append(s.baseNsPerPkt, o.baseNsPerPkt...)
	s.mbPerSec = append(s.mbPerSec, o.mbPerSec...)
	s.vsBaseline = append(s.vsBaseline, o.vsBaseline...)
	s.forced = s.forced || o.forced
}

type table struct {
	cpu    string                        // the "cpu:" line of go test's header
	groups []group                       // in order of first appearance
	tiers  map[group][]string            // in order of first appearance
	data   map[group]map[string]*samples // group -> tier -> samples
	paired pairedRows                    // the other benchmarks of a path against its baseline
}

// pairedRows are the benchmarks outside the Seal/Open tables that time a path alternately with its
// baseline, by name in order of first appearance.
type pairedRows struct {
	names []string
	rows  map[string]*samples
}

// run echoes in to out, then prints the tables. It fails when go test reported a failure (a
// benchmark that panics ends its package's run, whose rows would otherwise be missing from the
// tables without a word), after printing what it has.
func run(in io.Reader, out io.Writer) error {
	t := &table{tiers: map[group][]string{}, data: map[group]map[string]*samples{}}
	w := bufio.NewWriter(out)
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	var failed []string
	for sc.Scan() {
		line := sc.Text()
		fmt.Fprintln(w, line)
		t.add(line)
		if strings.HasPrefix(line, "FAIL") || strings.HasPrefix(line, "--- FAIL") {
			failed = append(failed, line)
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	t.print(w)
	if err := w.Flush(); err != nil {
		return err
	}
	if len(failed) > 0 {
		return fmt.Errorf("go test failed, its rows are missing:\n%s", strings.Join(failed, "\n"))
	}
	return nil
}

// add records line if it is a result of one of the kernels benchmarks.
func (t *table) add(line string) {
	if cpu, ok := strings.CutPrefix(line, "cpu: "); ok {
		t.cpu = cpu
	}
	m := resultLine.FindStringSubmatch(line)
	if m == nil {
		return
	}
	name := procsSuffix.ReplaceAllString(m[1], "")
	parts := strings.Split(name, "/")
	if len(parts) != 4 || (parts[0] != "Seal" && parts[0] != "Open") {
		t.paired.add(name, strings.Fields(m[2]))
		return
	}
	g, tier := group{suite: parts[1], workload: parts[2], dir: parts[0]}, parts[3]
	s := parse(strings.Fields(m[2]))
	if len(s.nsPerPkt) == 0 {
		return // not one of ours: without ns/pkt there is nothing to compare
	}
	if t.data[g] == nil {
		t.data[g] = map[string]*samples{}
		t.groups = append(t.groups, g)
	}
	acc := t.data[g][tier]
	if acc == nil {
		acc = &samples{}
		t.data[g][tier] = acc
		t.tiers[g] = append(t.tiers[g], tier)
	}
	acc.merge(s)
}

// parse returns the samples of a benchmark result's value/unit pairs.
func parse(fields []string) *samples {
	s := &samples{}
	for i := 0; i+1 < len(fields); i += 2 {
		if v, err := strconv.ParseFloat(fields[i], 64); err == nil {
			s.record(fields[i+1], v)
		}
	}
	return s
}

// add records the result fields of the benchmark name if they hold a paired ratio.
func (p *pairedRows) add(name string, fields []string) {
	s := parse(fields)
	if len(s.vsBaseline) == 0 {
		return
	}
	if p.rows == nil {
		p.rows = map[string]*samples{}
	}
	acc := p.rows[name]
	if acc == nil {
		acc = &samples{}
		p.rows[name] = acc
		p.names = append(p.names, name)
	}
	acc.merge(s)
}

// print writes the tables: groups ordered by suite, then workload, then direction, each in order of
// first appearance; rows in order of appearance with the baseline last.
func (t *table) print(w io.Writer) {
	t.printGroups(w)
	t.printPaired(w)
}

// printGroups writes the Seal/Open tables and their summary of the default path.
func (t *table) printGroups(w io.Writer) {
	if len(t.groups) == 0 {
		return
	}
	suites, workloads, dirs := firstSeen(t.groups, func(g group) string { return g.suite }),
		firstSeen(t.groups, func(g group) string { return g.workload }),
		firstSeen(t.groups, func(g group) string { return g.dir })
	groups := slices.Clone(t.groups)
	slices.SortStableFunc(groups, func(a, b group) int {
		if c := suites[a.suite] - suites[b.suite]; c != 0 {
			return c
		}
		if c := workloads[a.workload] - workloads[b.workload]; c != 0 {
			return c
		}
		return dirs[a.dir] - dirs[b.dir]
	})

	runs := 0
	for _, g := range groups {
		for _, s := range t.data[g] {
			runs = max(runs, len(s.nsPerPkt))
		}
	}
	fmt.Fprintf(w, "\n== kernels vs baseline, medians of %d run(s); vs baseline = baseline ns/pkt / tier ns/pkt ==\n", runs)
	for _, g := range groups {
		fmt.Fprintf(w, "\n%s  %s  %s\n", g.suite, g.workload, g.dir)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "tier\tns/pkt\tGB/s\tvs baseline\t")
		base := 0.0
		if s := t.data[g][baseline]; s != nil {
			base = median(s.nsPerPkt)
		}
		rows := slices.DeleteFunc(slices.Clone(t.tiers[g]), func(tier string) bool { return tier == baseline })
		if t.data[g][baseline] != nil {
			rows = append(rows, baseline)
		}
		for _, tier := range rows {
			s := t.data[g][tier]
			ns := median(s.nsPerPkt)
			gbs, ratio := "-", "-"
			if len(s.mbPerSec) > 0 {
				gbs = strconv.FormatFloat(median(s.mbPerSec)/1000, 'f', 3, 64) // testing's MB/s is 1e6 B/s
			}
			if base > 0 && ns > 0 {
				ratio = strconv.FormatFloat(base/ns, 'f', 2, 64) + "x"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t\n", tier, strconv.FormatFloat(ns, 'f', 1, 64), gbs, ratio)
		}
		tw.Flush()
	}
	t.printDefault(w, groups)
}

// defaultPath is the path name of the package-level Seal and Open, whose floor is the baseline.
const defaultPath = "default"

// printDefault writes the summary: the default path against the baseline, one row per group, each
// row below 1.00x flagged. The ratio is the median of the default path's own vs-baseline samples
// (measured alternately with the baseline) where it has them, else that of the two rows' medians.
func (t *table) printDefault(w io.Writer, groups []group) {
	if !slices.ContainsFunc(groups, func(g group) bool { return t.data[g][defaultPath] != nil }) {
		return
	}
	fmt.Fprintf(w, "\n== default path vs baseline (cpu: %s) ==\n", t.cpu)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "suite\tworkload\tdir\tdefault ns/pkt\tvs baseline\t\t")
	below := 0
	for _, g := range groups {
		d, b := t.data[g][defaultPath], t.data[g][baseline]
		if d == nil || (b == nil && len(d.vsBaseline) == 0) {
			continue
		}
		dn := median(d.nsPerPkt)
		ratio := 0.0
		if len(d.vsBaseline) > 0 {
			ratio = median(d.vsBaseline)
		} else {
			ratio = median(b.nsPerPkt) / dn
		}
		flag := ""
		if ratio < 1 {
			flag = "BELOW 1.00x"
			below++
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%.1f\t%.3fx\t%s\t\n", g.suite, g.workload, g.dir, dn, ratio, flag)
	}
	tw.Flush()
	fmt.Fprintf(w, "%d row(s) of the default path below the baseline\n", below)
}

// printPaired writes the summary of the other benchmarks that time a path alternately with its
// baseline: medians per benchmark, the default path's rows below 1.00x flagged.
func (t *table) printPaired(w io.Writer) {
	p := &t.paired
	if len(p.names) == 0 {
		return
	}
	fmt.Fprintf(w, "\n== other shapes: default path vs baseline, alternating (cpu: %s) ==\n", t.cpu)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "benchmark\tns/pkt\tbaseline ns/pkt\tvs baseline\t\t")
	below := 0
	for _, name := range p.names {
		r := p.rows[name]
		ns, base := "-", "-"
		if len(r.nsPerPkt) > 0 {
			ns = strconv.FormatFloat(median(r.nsPerPkt), 'f', 1, 64)
		}
		if len(r.baseNsPerPkt) > 0 {
			base = strconv.FormatFloat(median(r.baseNsPerPkt), 'f', 1, 64)
		}
		ratio, flag := median(r.vsBaseline), ""
		switch {
		case r.forced:
			flag = "forced"
		case ratio < 1:
			flag = "BELOW 1.00x"
			below++
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%.3fx\t%s\t\n", name, ns, base, ratio, flag)
	}
	tw.Flush()
	fmt.Fprintf(w, "%d row(s) of the default path's other shapes below the baseline\n", below)
}

// firstSeen numbers the distinct keys of gs in order of first appearance.
func firstSeen(gs []group, key func(group) string) map[string]int {
	m := map[string]int{}
	for _, g := range gs {
		if _, ok := m[key(g)]; !ok {
			m[key(g)] = len(m)
		}
	}
	return m
}

// median of a non-empty sample; the mean of the middle two for an even count.
func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}
