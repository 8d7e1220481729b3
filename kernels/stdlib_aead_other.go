// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

//go:build !amd64 || !gc || purego

package kernels

// stdChaChaAEAD reports whether the Stdlib tier runs the ChaCha family through golang.org/x/crypto's
// chacha20poly1305 AEADs. Where they have no assembly (arm64, purego) their portable composition
// allocates on every call (its one-time Poly1305 key escapes to the heap), so the tier composes the
// same parts itself (stdChaChaComposed).
const stdChaChaAEAD = false
