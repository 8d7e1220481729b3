// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package kernels

// The default path (Seal, Open, NewAEAD) chooses, per suite family and batch, which tier runs the
// batch: the SIMD kernels win by different margins on different microarchitectures and batch
// shapes, and on some they lose to the standard library. So the choice is a small table keyed by
// what the CPU is (cpuClass, from its features, vendor and family), one route per suite family; a
// CPU the table does not know takes the safe choice, the Stdlib tier, wherever the kernels' lead was
// not measured on its class. The measurements behind each entry are in docs/benchmarks.md, with the
// command that reproduces them.

// cpuClass is what the dispatch table knows of a CPU beyond its instruction set.
type cpuClass uint8

const (
	// cpuUnmeasured: no kernel tier of ours was measured against the standard library here (arm64,
	// amd64 without AVX2, other vendors, purego builds): the Stdlib tier throughout.
	cpuUnmeasured cpuClass = iota
	// cpuAVX512: AMD or Intel with the AVX-512 features of the AVX512 tiers (AMD Zen 4 and 5, Intel
	// Sapphire Rapids).
	cpuAVX512
	// cpuAVX2Lat1: AVX2 without AVX-512 on a core whose vector integer instructions have a 1-cycle
	// latency (AMD Zen 2 and 3, Intel cores since Haswell).
	cpuAVX2Lat1
)

// route is a family's entry in the dispatch table: batches with at least minOps of the family's ops
// run on tier, smaller ones (and every batch when tier is Stdlib) on Stdlib. In a batch that runs on
// Stdlib, the ops small enough for tiny's fused one-call kernels (tinyOps: the ChaCha family's
// messages of up to three blocks) run there instead, where tiny is not Stdlib.
type route struct {
	tier   Tier
	minOps int
	tiny   Tier
}

// routes is the dispatch table: per CPU class, the ChaCha family's and the AES-GCM family's route,
// each entry beside the measurement that justifies it (the chosen tier's speed against the
// standard library's; the runs are in docs/benchmarks.md).
var routes = [...]struct{ chacha, gcm route }{
	// Nothing measured: the standard library.
	cpuUnmeasured: {route{Stdlib, 0, Stdlib}, route{Stdlib, 0, Stdlib}},
	// AMD Zen 5: 64 x 1420 B 2.6-3.0x, 1 op 1.02x or more, both families. docs/benchmarks.md
	cpuAVX512: {route{AVX512, 1, Stdlib}, route{AVX512, 1, Stdlib}},
	// AMD Zen 3: GCM 1.47-3.36x on every shape, 1 op too. ChaCha: the fused tiny kernels on ops of up
	// to 192 B, 1.45-1.75x on 64 x 64 B (three ops a call), 1.10x on 1 x 64 B; the AVX2 lanes
	// 1.05-1.18x on 64 x 1420 B of one length but below x/crypto on mixed lengths and in the tunnel's
	// batches (TCP CPU per Gbit 1.05-1.10x); the one-message passes 0.7-0.9x. docs/benchmarks.md
	cpuAVX2Lat1: {route{Stdlib, 0, AVX2}, route{AVX2, 1, Stdlib}},
}

// chachaRoute and gcmRoute are this CPU's routes; tests set them to run the dispatcher's choices.
var chachaRoute, gcmRoute = routes[thisCPU].chacha, routes[thisCPU].gcm

// tierFor returns the tier that runs n of the family's ops.
func (r route) tierFor(n int) Tier {
	if n < r.minOps {
		return Stdlib
	}
	return r.tier
}
