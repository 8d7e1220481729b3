package kernels

import (
	"errors"
	"unsafe"
)

// Op is one independent AEAD operation. Ops in one call may use different keys and suites.
//
// Seal reads Src (plaintext) and writes Dst, which must be len(Src)+TagSize bytes: the ciphertext
// followed by the tag. Open reads Src (ciphertext followed by the tag) and writes the plaintext to Dst,
// which must be len(Src)-TagSize bytes; if Src is shorter than TagSize the op fails authentication
// and Dst is only zeroed. Dst either starts at Src's first byte (in place) or does not overlap Src at
// all; AD must not overlap Dst. Nonce is Key.Suite().NonceSize() bytes.
type Op struct {
	Key   *Key
	Nonce []byte
	AD    []byte // additional data, authenticated, not encrypted
	Src   []byte
	Dst   []byte
	Err   error // Open: nil, or ErrAuth (Dst is then zeroed)
}

// ErrAuth is the one error an Open reports: the tag did not verify (or the ciphertext is shorter than
// a tag). Its Dst has been zeroed so that no unauthenticated plaintext is released.
var ErrAuth = errors.New("kernels: message authentication failed")

// checkOps panics on misuse, before any op is processed, like cipher.AEAD.
func checkOps(ops []Op, open bool) {
	for i := range ops {
		op := &ops[i]
		k := op.Key
		if k == nil {
			panic("kernels: nil key")
		}
		if k.suite.KeySize() == 0 {
			panic("kernels: Key not made by NewKey")
		}
		if k.destroyed {
			panic("kernels: use of destroyed key")
		}
		if len(op.Nonce) != k.suite.NonceSize() {
			panic("kernels: incorrect nonce length given to " + k.suite.String())
		}
		if open {
			if len(op.Src) < TagSize {
				continue // a failed Open, reported as ErrAuth; Dst is only zeroed
			}
			if len(op.Dst) != len(op.Src)-TagSize {
				panic("kernels: Open Dst must be len(Src)-TagSize bytes")
			}
			if uint64(len(op.Dst)) > k.suite.maxPlaintext() {
				panic("kernels: ciphertext too large for " + k.suite.String())
			}
		} else {
			if uint64(len(op.Src)) > k.suite.maxPlaintext() {
				panic("kernels: plaintext too large for " + k.suite.String())
			}
			if len(op.Dst) != len(op.Src)+TagSize {
				panic("kernels: Seal Dst must be len(Src)+TagSize bytes")
			}
		}
		if inexactOverlap(op.Dst, op.Src) {
			panic("kernels: Dst overlaps Src other than exactly at its start")
		}
		if anyOverlap(op.AD, op.Dst) {
			panic("kernels: AD overlaps Dst")
		}
	}
}

// anyOverlap reports whether x and y share memory at any (not necessarily corresponding) index.
// The memory beyond the slices' lengths is ignored.
func anyOverlap(x, y []byte) bool {
	return len(x) > 0 && len(y) > 0 &&
		uintptr(unsafe.Pointer(&x[0])) <= uintptr(unsafe.Pointer(&y[len(y)-1])) &&
		uintptr(unsafe.Pointer(&y[0])) <= uintptr(unsafe.Pointer(&x[len(x)-1]))
}

// inexactOverlap reports whether x and y share memory at any non-corresponding index. Dst and Src
// starting at the same byte is the in-place case every tier supports; any other overlap would make a
// lane read bytes it has already overwritten.
func inexactOverlap(x, y []byte) bool {
	if len(x) == 0 || len(y) == 0 || &x[0] == &y[0] {
		return false
	}
	return anyOverlap(x, y)
}

// failOpen marks op as failed and zeroes its destination so no unauthenticated plaintext escapes.
func failOpen(op *Op) {
	clear(op.Dst)
	op.Err = ErrAuth
}
