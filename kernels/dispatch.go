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
	// cpuAVX512: the AVX512 tier runs. Measured on AMD Zen 5 (2.2-4x the standard library on
	// batches, 1.02-1.8x on one message); Intel Sapphire Rapids and AMD Zen 4 run the same code.
	cpuAVX512
	// cpuAVX2Lat1: AVX2 without AVX-512 on a core whose vector integer instructions have a 1-cycle
	// latency (AMD Zen 2 and 3, Intel cores since Haswell). Measured on AMD Zen 3: the AVX2 AES-GCM
	// kernels (VAES and VPCLMULQDQ on ymm) beat crypto/cipher on every shape, 1.4-2.1x; the AVX2
	// ChaCha20-Poly1305 kernels do not beat x/crypto on any (0.5-0.9x), so that family runs on
	// Stdlib.
	cpuAVX2Lat1
)

// route is a family's entry in the dispatch table: batches with at least minOps of the family's ops
// run on tier, smaller ones (and every batch when tier is Stdlib) on Stdlib.
type route struct {
	tier   Tier
	minOps int
}

// routes is the dispatch table: per CPU class, the ChaCha family's and the AES-GCM family's route.
var routes = [...]struct{ chacha, gcm route }{
	cpuUnmeasured: {route{Stdlib, 0}, route{Stdlib, 0}},
	cpuAVX512:     {route{AVX512, 1}, route{AVX512, 1}},
	cpuAVX2Lat1:   {route{Stdlib, 0}, route{AVX2, 1}},
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
