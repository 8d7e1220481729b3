// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

//go:build !purego

package tunoffload

// vectorTiers returns switches for the vector kernels the CPU runs, the widest first.
func vectorTiers() []func(on bool) {
	var tiers []func(on bool)
	if useAVX512 {
		tiers = append(tiers, func(on bool) { useAVX512 = on })
	}
	if useAVX2 {
		tiers = append(tiers, func(on bool) { useAVX2 = on })
	}
	return tiers
}
