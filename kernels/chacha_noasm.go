// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

//go:build !amd64 || !gc || purego

package kernels

// This build has no ChaCha-family SIMD code: every tier runs the portable code.

func chachaHasSIMD(t Tier) bool { return false }

func chachaRunSIMD(t Tier, ops []Op, open bool) int {
	panic("kernels: no ChaCha SIMD code in this build")
}
