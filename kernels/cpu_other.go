// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

//go:build (!amd64 || !gc) && !purego

package kernels

// thisCPU is the dispatch table's class of this CPU: no SIMD tier of ours runs in this build.
const thisCPU = cpuUnmeasured
