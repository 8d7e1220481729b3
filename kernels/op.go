// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

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

// checkOps panics on misuse, before any op is processed, like cipher.AEAD, and returns how many ops
// belong to the ChaCha family and to the AES-GCM family. validPrefix passes the common, valid ops
// with a few comparisons each; any other op goes through checkOp, which finds the fault and names
// it, or passes the op: an Open shorter than a tag.
func checkOps(ops []Op, open bool) (chacha, gcm int) {
	for {
		n, g := validPrefix(ops, open)
		chacha, gcm = chacha+n-g, gcm+g
		if n == len(ops) {
			return chacha, gcm
		}
		op := &ops[n]
		checkOp(op, open)
		if op.Key.suite.isGCM() {
			gcm++
		} else {
			chacha++
		}
		ops = ops[n+1:]
	}
}

// validPrefix returns how many ops from the first pass its checks, which every valid op but an
// Open shorter than a tag passes and no misused op does, and how many of those are AES-GCM ops. It
// checks a key once for a run of ops that share it, and each overlap with two unsigned
// comparisons: x and y overlap exactly when y starts less than len(x) bytes after x or x less than
// len(y) after y (the differences wrap around when the start is before); an empty slice may fail
// this where checkOp then passes it. It calls nothing, so its loop keeps its state in registers
// (the measurements: docs/experiments.md, 2026-12-03 third session).
func validPrefix(ops []Op, open bool) (n, gcm int) {
	tag := TagSize // len(Dst) - len(Src)
	if open {
		tag = -TagSize
	}
	var key *Key
	nonceSize, isGCM := -1, 0 // of key; no nonce length matches -1, so a nil first key stops the pass
	for i := range ops {
		op := &ops[i]
		if k := op.Key; k != key {
			if k == nil || k.nonceSize == 0 || k.destroyed {
				return i, gcm
			}
			key, nonceSize, isGCM = k, k.nonceSize, 0
			if k.suite.isGCM() {
				isGCM = 1
			}
		}
		dst := len(op.Src) + tag
		d, s, a := sliceAddr(op.Dst), sliceAddr(op.Src), sliceAddr(op.AD)
		if len(op.Nonce) != nonceSize || len(op.Dst) != dst || uint64(dst) > minMaxPlaintext ||
			d != s && (d-s < uintptr(len(op.Src)) || s-d < uintptr(dst)) || // Dst and Src, not in place
			a-d < uintptr(dst) || d-a < uintptr(len(op.AD)) { // AD and Dst
			return i, gcm
		}
		gcm += isGCM
	}
	return len(ops), gcm
}

// sliceAddr is the address of x's first element (of its array, if x is empty), 0 for nil.
func sliceAddr(x []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(x))) }

// minMaxPlaintext is the smaller of the suites' maxPlaintext: a Dst no longer passes the length check
// of every suite.
const minMaxPlaintext = 1<<36 - 32

// checkOp panics with the message of the first check op fails. An Open whose ciphertext is shorter
// than the tag passes: it fails authentication, and its Dst is only zeroed.
func checkOp(op *Op, open bool) {
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
			return
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
