#!/usr/bin/env bash
# Prints the CPU that benchmark figures come from: model, family/model numbers and the SIMD features
# that select the kernels' tiers (the dispatch table in kernels/dispatch.go).
set -euo pipefail
if [ -r /proc/cpuinfo ]; then
	f() { grep -m1 "^$1[[:space:]]*:" /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'; }
	flags=$(f flags)
	simd=$(for x in avx2 bmi2 aes pclmulqdq vaes vpclmulqdq avx512f avx512vl avx512bw avx512ifma asimd pmull; do
		case " $flags " in *" $x "*) printf '%s ' "$x";; esac; done)
	echo "cpu: $(f 'model name') (vendor $(f vendor_id), family $(f 'cpu family'), model $(f model)); $(nproc) CPUs; SIMD: ${simd:-none}"
else
	echo "cpu: $(uname -m) (no /proc/cpuinfo)"
fi
# GODEBUG=cpu.avx512f=off and the like hide features from Go's feature detection (the standard
# library's and golang.org/x/sys/cpu, which the kernels' dispatch reads): the figures are then those of
# a CPU without them, such as the AVX2 class measured on an AVX-512 machine.
hidden=$(printf '%s' "${GODEBUG:-}" | tr ',' '\n' | grep '^cpu\.' | tr '\n' ' ' || true)
if [ -n "$hidden" ]; then
	echo "GODEBUG: ${hidden% } (the kernels, x/crypto and the standard library run as without those features)"
fi
