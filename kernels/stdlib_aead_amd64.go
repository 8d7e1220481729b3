// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

//go:build gc && !purego

package kernels

// stdChaChaAEAD reports whether the Stdlib tier runs the ChaCha family through golang.org/x/crypto's
// chacha20poly1305 AEADs: on amd64 they are its assembly and allocate nothing.
const stdChaChaAEAD = true
