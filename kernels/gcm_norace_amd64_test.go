// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

//go:build gc && !purego && !race

package kernels

// The zero-allocation promise of the amd64 AES-GCM tiers (the race detector allocates on its own
// account, so this only runs without it).

import "testing"

// TestGCMAsmAllocs checks that the assembly tiers allocate nothing per batch.
func TestGCMAsmAllocs(t *testing.T) {
	key, _ := NewKey(AES128GCM, make([]byte, 16))
	ops := make([]Op, 40)
	for i := range ops {
		n := 50 * i
		ops[i] = Op{Key: key, Nonce: make([]byte, 12), Src: make([]byte, n), Dst: make([]byte, n+TagSize)}
	}
	for _, tier := range gcmAsmTiers() {
		if a := testing.AllocsPerRun(20, func() { gcmRunTier(tier, ops, false) }); a != 0 {
			t.Errorf("%v: %v allocations per batch", tier, a)
		}
	}
}
