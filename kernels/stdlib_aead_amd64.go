//go:build gc && !purego

package kernels

// stdChaChaAEAD reports whether the Stdlib tier runs the ChaCha family through golang.org/x/crypto's
// chacha20poly1305 AEADs: on amd64 they are its assembly and allocate nothing.
const stdChaChaAEAD = true
