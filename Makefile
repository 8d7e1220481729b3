# wirebatch: `make test` runs every test (installing what it needs on a fresh Debian machine, as root);
# `make demo` runs the main job. See README.md.

GO       ?= go
PKGS     := ./...
# Packages whose concurrency the race detector must see.
RACE_PKGS := ./ring/... ./batch/... ./kernels/... ./quic/... ./dataplane/... ./tunvnet/... ./handshake/... ./loadgen/... ./netns-tests/relay/... ./device/... ./udp/...
# Debian packages the tests use: ip/veth/netns, iperf3 for the loadgen comparison, qemu for arm64 runs,
# gcc and intel-ipsec-mb for the interop test against that library (bench/ipsecmb, cgo), wg and
# wg-quick (wireguard-tools) to run our tunnel as wg-quick's userspace implementation.
DEB_PKGS := iproute2 iputils-ping iperf3 qemu-user nftables python3 gcc libipsec-mb-dev wireguard-tools

.PHONY: all test deps unit race purego arm64 amd64-cpus interop check generate fuzz bench bench-ipsecmb bench-loadgen bench-tunnel demo

all: check test

## test: every test: static checks, unit tests, race detector, purego build, arm64 under qemu, amd64
## CPUs without AVX-512 under qemu, and interop with intel-ipsec-mb.
test: deps check unit race purego arm64 amd64-cpus interop

## deps: install the Debian packages the tests need, when missing (needs root and apt-get).
deps:
	@scripts/deps.sh $(DEB_PKGS)

## unit: the tests, then every kernels and quic benchmark once (a benchmark that breaks shows here,
## not in the next make bench).
unit:
	$(GO) test -count=1 -timeout 15m $(PKGS)
	@echo "$(GO) test -count=1 -run '^$$' -bench . -benchtime 1x ./kernels/ ./quic/"
	@out=$$($(GO) test -count=1 -run '^$$' -bench . -benchtime 1x ./kernels/ ./quic/ 2>&1) || { echo "$$out"; exit 1; }

race:
	$(GO) test -count=1 -race -short -timeout 10m $(RACE_PKGS)

purego:
	$(GO) build -tags purego $(PKGS)
	$(GO) test -count=1 -short -tags purego ./kernels/... ./quic/...

## amd64-cpus: the SIMD packages' tests on emulated amd64 CPUs without AVX-512 (qemu-x86_64): -cpu
## max (AVX2, BMI2, AES-NI; no AVX-512, no VAES), where the dispatch table takes the AVX2 class's
## routes, as on AMD Zen 2/3 and Intel cores without AVX-512; Westmere (AES-NI, no AVX) and Nehalem
## (no AES-NI either), where it takes the standard library throughout. An instruction that a path
## must not use on such a CPU faults there, where it passes on the machines that have it. Emulated,
## so -short; amd64 only.
AMD64_CPUS ?= max Westmere Nehalem
amd64-cpus:
	@if [ "$$($(GO) env GOARCH)" != amd64 ]; then echo "amd64-cpus: amd64 only"; \
	elif ! command -v qemu-x86_64 >/dev/null; then echo "amd64-cpus: qemu-x86_64 missing (apt-get install qemu-user)"; exit 1; \
	else for c in $(AMD64_CPUS); do \
		echo "WIREBATCH_NO_AVX512=1 $(GO) test -count=1 -short -exec 'qemu-x86_64 -cpu $$c' ./kernels/... ./quic/... ./internal/tunoffload/..."; \
		WIREBATCH_NO_AVX512=1 $(GO) test -count=1 -short -exec "qemu-x86_64 -cpu $$c" ./kernels/... ./quic/... ./internal/tunoffload/... || exit 1; \
	done; fi

## interop: package kernels against intel-ipsec-mb, byte for byte both ways (bench/ipsecmb, its own
## module: cgo and the library's headers are needed only there).
interop:
	cd bench/ipsecmb && $(GO) vet ./... && $(GO) test -count=1 ./...

arm64:
	@if command -v qemu-aarch64 >/dev/null; then \
		GOARCH=arm64 $(GO) test -count=1 -short -exec qemu-aarch64 ./kernels/... ./quic/... ./ring/... ./batch/...; \
	else echo "arm64: qemu-aarch64 missing (apt-get install qemu-user)"; exit 1; fi

## check: gofmt, go vet (native, purego, arm64; tools/pipeprobe, a module of its own, natively),
## generated assembly up to date.
check: generate
	@bad=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$bad" ]; then echo "gofmt needed:"; echo "$$bad"; exit 1; fi
	$(GO) vet $(PKGS)
	$(GO) vet -tags purego $(PKGS)
	GOARCH=arm64 $(GO) vet $(PKGS)
	cd tools/pipeprobe && $(GO) vet ./...
	@stale=$$(git status --porcelain -- 'kernels/*.s' 'internal/tunoffload/*.s' 'tools/pipeprobe'); if [ -n "$$stale" ]; then \
		echo "generated assembly is stale or uncommitted (make generate, then commit):"; echo "$$stale"; exit 1; fi

## generate: regenerate the avo assembly, each package's from the generator in its _asm/ directory.
generate:
	$(GO) generate ./kernels/... ./internal/tunoffload/...
	cd tools/pipeprobe && $(GO) generate ./...

## fuzz: a short run of every fuzz target (FUZZTIME each).
FUZZTIME ?= 10s
fuzz:
	@scripts/fuzz.sh $(FUZZTIME)

## bench: kernels against x/crypto and crypto/cipher (the default path and every tier) and quic
## against per-packet protection, as tables (raw output above them), the CPU model first and every
## default-path row below its baseline flagged.
BENCHTIME ?= 200ms
BENCHCOUNT ?= 5
bench:
	@scripts/cpumodel.sh
	$(GO) test -run '^$$' -bench . -benchtime=$(BENCHTIME) -count=$(BENCHCOUNT) ./kernels/ ./quic/ | $(GO) run ./internal/benchtable

## bench-ipsecmb: kernels against intel-ipsec-mb (its best code for this CPU, its AVX2 code where
## GODEBUG=cpu.avx512f=off hides AVX-512 from ours) on the same batches.
bench-ipsecmb: deps
	@scripts/cpumodel.sh
	cd bench/ipsecmb && $(GO) test -run '^$$' -bench . -benchtime=$(BENCHTIME) -count=$(BENCHCOUNT) . | $(GO) run ../../internal/benchtable

## bench-loadgen: loadgen against iperf3 -u -b 0 over a veth between two namespaces (root).
bench-loadgen: deps
	scripts/bench-loadgen.sh

## demo: the main job: two hosts in network namespaces brought up with wg-quick, our tunnel as the
## userspace implementation at both ends, loadgen through it, its report and `wg show` (root;
## DEMO_BENCH=1 adds a round of bench-tunnel).
demo: deps
	scripts/demo.sh

## bench-tunnel: our tunnel against wireguard-go, both under wg-quick on the same two hosts: TCP, UDP
## 1420 B and 64 B (root).
bench-tunnel: deps
	scripts/bench-tunnel.sh
