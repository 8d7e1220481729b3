//go:build !amd64 || !gc || purego

package kernels

// thisCPU is the dispatch table's class of this CPU: no SIMD tier of ours runs in this build.
const thisCPU = cpuUnmeasured
