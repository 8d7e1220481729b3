// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

//go:build !amd64 || !gc || purego

package kernels

// Builds without AES-GCM assembly: only the Generic tier runs the family.

// gcmAsmKey holds nothing: no assembly tier reads key material here.
type gcmAsmKey struct{}

func (*gcmAsmKey) init([]byte, *ghashKey) {}
func (*gcmAsmKey) destroy()               {}

// gcmHas reports whether this build has AES-GCM code of tier t that this CPU runs.
func gcmHas(t Tier) bool { return t == Generic }

// gcmRunTier processes the AES-GCM ops of ops; t is always Generic here.
func gcmRunTier(_ Tier, ops []Op, open bool) (failed int) { return gcmRunGeneric(ops, open) }
