// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

//go:build !amd64 || purego

package tunoffload

// vectorTiers returns switches for the vector kernels the CPU runs: none here.
func vectorTiers() []func(on bool) { return nil }
