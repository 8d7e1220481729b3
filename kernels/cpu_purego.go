// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

//go:build purego

package kernels

// thisCPU is the dispatch table's class of this CPU: in a purego build the standard library's
// AEADs run their portable Go code, as the Generic tier does, whatever the CPU.
const thisCPU = cpuPortable
