// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package main

import (
	"strings"
	"testing"
)

func TestRun(t *testing.T) {
	for _, c := range []struct {
		name, in string
		table    string // what run prints after echoing the input
		fails    bool   // run reports go test's failure
	}{
		{
			name: "medians, GOMAXPROCS suffix, baseline last",
			in: `goos: linux
goarch: amd64
pkg: github.com/wirebatch/wirebatch/kernels
BenchmarkSeal/ChaCha20-Poly1305/1420x64/AVX512-2   	 2893	 40305 ns/op	2254.81 MB/s	 600.0 ns/pkt	 0 B/op	 0 allocs/op
BenchmarkSeal/ChaCha20-Poly1305/1420x64/Generic-2  	  495	273263 ns/op	 332.57 MB/s	4270 ns/pkt	 0 B/op	 0 allocs/op
BenchmarkSeal/ChaCha20-Poly1305/1420x64/baseline-2 	 2432	 46577 ns/op	1951.18 MB/s	 720.0 ns/pkt	 0 B/op	 0 allocs/op
BenchmarkSeal/ChaCha20-Poly1305/1420x64/AVX512-2   	 2893	 40305 ns/op	2000.00 MB/s	 700.0 ns/pkt	 0 B/op	 0 allocs/op
BenchmarkSeal/ChaCha20-Poly1305/1420x64/Generic-2  	  495	273263 ns/op	 300.00 MB/s	4000 ns/pkt	 0 B/op	 0 allocs/op
BenchmarkSeal/ChaCha20-Poly1305/1420x64/baseline-2 	 2432	 46577 ns/op	1900.00 MB/s	 740.0 ns/pkt	 0 B/op	 0 allocs/op
BenchmarkSeal/ChaCha20-Poly1305/1420x64/AVX512-2   	 2893	 40305 ns/op	2100.00 MB/s	 650.0 ns/pkt	 0 B/op	 0 allocs/op
BenchmarkSeal/ChaCha20-Poly1305/1420x64/Generic-2  	  495	273263 ns/op	 310.00 MB/s	4100 ns/pkt	 0 B/op	 0 allocs/op
BenchmarkSeal/ChaCha20-Poly1305/1420x64/baseline-2 	 2432	 46577 ns/op	1950.00 MB/s	 730.0 ns/pkt	 0 B/op	 0 allocs/op
PASS
ok  	github.com/wirebatch/wirebatch/kernels	12.3s
`,
			// AVX512: medians 650 ns/pkt and 2100 MB/s; 730/650 = 1.123.
			table: `
== kernels vs baseline, medians of 3 run(s); vs baseline = baseline ns/pkt / tier ns/pkt ==

ChaCha20-Poly1305  1420x64  Seal
      tier  ns/pkt   GB/s  vs baseline
    AVX512   650.0  2.100        1.12x
   Generic  4100.0  0.310        0.18x
  baseline   730.0  1.950        1.00x
`,
		},
		{
			name: "ordering by suite, workload, direction; even medians; no baseline; no MB/s",
			in: `BenchmarkSeal/AES-128-GCM/64x64/Generic     10  100 ns/op  1.0 ns/pkt
BenchmarkSeal/AES-128-GCM/1420x1/Generic    10  100 ns/op  1000 MB/s  10 ns/pkt
BenchmarkSeal/AES-128-GCM/1420x1/Generic    10  100 ns/op  3000 MB/s  30 ns/pkt
BenchmarkSeal/ChaCha20-Poly1305/64x64/Generic-8 10  100 ns/op  5 ns/pkt
BenchmarkOpen/AES-128-GCM/64x64/Generic     10  100 ns/op  2.0 ns/pkt
BenchmarkOpen/AES-128-GCM/64x64/baseline    10  100 ns/op  4.0 ns/pkt
`,
			table: `
== kernels vs baseline, medians of 2 run(s); vs baseline = baseline ns/pkt / tier ns/pkt ==

AES-128-GCM  64x64  Seal
     tier  ns/pkt  GB/s  vs baseline
  Generic     1.0     -            -

AES-128-GCM  64x64  Open
      tier  ns/pkt  GB/s  vs baseline
   Generic     2.0     -        2.00x
  baseline     4.0     -        1.00x

AES-128-GCM  1420x1  Seal
     tier  ns/pkt   GB/s  vs baseline
  Generic    20.0  2.000            -

ChaCha20-Poly1305  64x64  Seal
     tier  ns/pkt  GB/s  vs baseline
  Generic     5.0     -            -
`,
		},
		{
			name: "other benchmarks and lines are only echoed",
			in: `BenchmarkChaChaLanes/16-2   100  5 ns/op
BenchmarkSeal/ChaCha20-Poly1305/1420x64-2   100  5 ns/op  1 ns/pkt
BenchmarkSeal/X/Y/Z/W-2   100  5 ns/op  1 ns/pkt
BenchmarkOpen/X/Y/Generic-2   100  5 ns/op
`,
			table: "",
		},
		{
			name: "a failed package is reported after the tables",
			in: `BenchmarkSeal/AES-128-GCM/64x64/Generic-2   	 1	 1 ns/op	 2.0 ns/pkt
panic: runtime error: invalid memory address or nil pointer dereference
FAIL	github.com/wirebatch/wirebatch/kernels	29.903s
`,
			table: `
== kernels vs baseline, medians of 1 run(s); vs baseline = baseline ns/pkt / tier ns/pkt ==

AES-128-GCM  64x64  Seal
     tier  ns/pkt  GB/s  vs baseline
  Generic     2.0     -            -
`,
			fails: true,
		},
		{name: "empty input", in: "", table: ""},
		{
			name: "other shapes: medians per benchmark, forced paths listed but not flagged",
			in: `cpu: AMD EPYC
BenchmarkChaChaLengths/65/Seal-2   	 1	 1 ns/op	 200.0 baseline-ns/pkt	 190.0 ns/pkt	 1.05 vs-baseline
BenchmarkFloor/AES-128-GCM/1x64/Open-2   	 1	 1 ns/op	 40.0 baseline-ns/pkt	 50.0 ns/pkt	 0.80 forced-vs-baseline
BenchmarkEncryptBlocks/AES-128-GCM/1-2   	 1	 1 ns/op	 20.0 baseline-ns/pkt	 21.0 ns/pkt	 0.95 vs-baseline
BenchmarkChaChaLanes/16-2   	 1	 5 ns/op
BenchmarkChaChaLengths/65/Seal-2   	 1	 1 ns/op	 200.0 baseline-ns/pkt	 210.0 ns/pkt	 0.95 vs-baseline
BenchmarkChaChaLengths/65/Seal-2   	 1	 1 ns/op	 210.0 baseline-ns/pkt	 200.0 ns/pkt	 1.03 vs-baseline
BenchmarkEncryptBlocks/AES-128-GCM/1-2   	 1	 1 ns/op	 20.0 baseline-ns/pkt	 19.0 ns/pkt	 0.99 vs-baseline
`,
			// ChaChaLengths: medians 200 ns/pkt, 200 baseline, 1.03x; EncryptBlocks (two runs): 20.0,
			// 20.0, (0.95+0.99)/2.
			table: `
== other shapes: default path vs baseline, alternating (cpu: AMD EPYC) ==
                    benchmark  ns/pkt  baseline ns/pkt  vs baseline             
        ChaChaLengths/65/Seal   200.0            200.0       1.030x             
  Floor/AES-128-GCM/1x64/Open    50.0             40.0       0.800x       forced
  EncryptBlocks/AES-128-GCM/1    20.0             20.0       0.970x  BELOW 1.00x
1 row(s) of the default path's other shapes below the baseline
`,
		},
		{
			name: "default path summary: cpu line, paired ratio preferred, a row below the baseline flagged",
			in: `cpu: AMD EPYC
BenchmarkSeal/AES-128-GCM/64x64/default-2   	 1	 1 ns/op	 199.0 baseline-ns/pkt	 100.0 ns/pkt	 1.99 vs-baseline
BenchmarkSeal/AES-128-GCM/64x64/baseline-2  	 1	 1 ns/op	 200.0 ns/pkt
BenchmarkOpen/AES-128-GCM/64x64/default-2   	 1	 1 ns/op	 210.0 ns/pkt
BenchmarkOpen/AES-128-GCM/64x64/baseline-2  	 1	 1 ns/op	 200.0 ns/pkt
`,
			table: `
== kernels vs baseline, medians of 1 run(s); vs baseline = baseline ns/pkt / tier ns/pkt ==

AES-128-GCM  64x64  Seal
      tier  ns/pkt  GB/s  vs baseline
   default   100.0     -        2.00x
  baseline   200.0     -        1.00x

AES-128-GCM  64x64  Open
      tier  ns/pkt  GB/s  vs baseline
   default   210.0     -        0.95x
  baseline   200.0     -        1.00x

== default path vs baseline (cpu: AMD EPYC) ==
        suite  workload   dir  default ns/pkt  vs baseline             
  AES-128-GCM     64x64  Seal           100.0       1.990x             
  AES-128-GCM     64x64  Open           210.0       0.952x  BELOW 1.00x
1 row(s) of the default path below the baseline
`,
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			var out strings.Builder
			if err := run(strings.NewReader(c.in), &out); (err != nil) != c.fails {
				t.Fatalf("run: %v, want failure %v", err, c.fails)
			}
			got := out.String()
			if !strings.HasPrefix(got, c.in) {
				t.Fatalf("the input is not echoed first:\n%s", got)
			}
			if table := got[len(c.in):]; table != c.table {
				t.Errorf("table:\n%s\nwant:\n%s", table, c.table)
			}
		})
	}
}

func TestMedian(t *testing.T) {
	for _, c := range []struct {
		in   []float64
		want float64
	}{
		{[]float64{3}, 3},
		{[]float64{5, 1, 3}, 3},
		{[]float64{4, 1, 3, 2}, 2.5},
		{[]float64{9, 9, 1, 9, 1}, 9},
	} {
		in := append([]float64(nil), c.in...)
		if got := median(c.in); got != c.want {
			t.Errorf("median(%v) = %v, want %v", c.in, got, c.want)
		}
		for i := range in {
			if in[i] != c.in[i] {
				t.Errorf("median reordered its argument")
			}
		}
	}
}
