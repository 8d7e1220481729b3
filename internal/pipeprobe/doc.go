// Package pipeprobe times how this CPU issues the AVX2 integer instructions of the ChaCha20 kernels:
// the latency of one dependent chain, the issue rate of each instruction kind over 12 independent
// chains, and the quarter round's instruction mix over 8 and 12 chains, in lockstep and skewed, in
// registers only (the vector pipes and the scheduler alone) and with the spill loads and stores that
// 16 ymm registers force. The rates are in cycles of the clock a chain of dependent scalar ADDs
// measures in the same run.
//
//	go test -run '^$' -bench . ./internal/pipeprobe
//
// It is the measurement behind the AVX2 analysis in the README (what bounds the AVX2 ChaCha20
// kernel); it is not used by the library.
package pipeprobe

//go:generate sh -c "cd ../../kernels/_asm/pipeprobe && go run . -out ../../../internal/pipeprobe/pipeprobe_amd64.s -stubs ../../../internal/pipeprobe/stubs_amd64.go -pkg pipeprobe -ops ../../../internal/pipeprobe/ops_amd64.go"
