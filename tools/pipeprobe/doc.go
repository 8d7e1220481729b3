// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

// Package pipeprobe times how this CPU issues the vector integer instructions of wirebatch's
// ChaCha20 and Poly1305 kernels: the latency of one dependent chain, the issue rate of each
// instruction kind over 12 independent chains, and the quarter round's instruction mix over 4, 6, 8
// and 12 chains, in lockstep and skewed, in registers only (the vector pipes and the scheduler
// alone) and with the spill loads and stores that 16 ymm registers force. Where the CPU has AVX-512
// F, VL and IFMA, the same for the zmm lane kernels' mix (VPADDD, VPXORD, VPROLD) and the IFMA
// Poly1305 lanes' multiplier (VPMADD52LUQ on zmm and ymm, alone, beside adds and beside 128-bit
// chunk inserts). The rates are in cycles of the clock a chain of dependent scalar ADDs measures in
// the same run.
//
//	cd tools/pipeprobe && go test -run '^$' -bench .
//
// It is the measurement behind the analysis of what bounds the ChaCha20 and Poly1305 kernels
// (docs/benchmarks.md): a research tool in a module of its own, not part of the library.
package pipeprobe

//go:generate sh -c "cd _asm && go run . -out ../pipeprobe_amd64.s -stubs ../stubs_amd64.go -pkg pipeprobe -ops ../ops_amd64.go"
