// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package kernels_test

import (
	"crypto/rand"
	"encoding/binary"
	"fmt"

	"github.com/wirebatch/wirebatch/kernels"
)

// A batch of packets sealed with one call and opened in place with another. The nonces follow
// WireGuard's transport messages: 4 zero bytes and a 64-bit little-endian counter that is never
// reused under one key.
func Example() {
	secret := make([]byte, kernels.ChaCha20Poly1305.KeySize())
	rand.Read(secret)
	key, err := kernels.NewKey(kernels.ChaCha20Poly1305, secret)
	if err != nil {
		panic(err)
	}
	defer key.Destroy() // wipes the expanded key

	packets := []string{"first packet", "second packet", "third packet"}
	ops := make([]kernels.Op, len(packets))
	for i, p := range packets {
		nonce := make([]byte, key.Suite().NonceSize())
		binary.LittleEndian.PutUint64(nonce[4:], uint64(i))
		ops[i] = kernels.Op{Key: key, Nonce: nonce, Src: []byte(p), Dst: make([]byte, len(p)+kernels.TagSize)}
	}
	kernels.Seal(ops) // ops may also mix keys and suites

	// Open each ciphertext into its own first bytes; one of them was tampered with on the way.
	for i := range ops {
		ops[i].Src = ops[i].Dst
		ops[i].Dst = ops[i].Src[:len(ops[i].Src)-kernels.TagSize]
	}
	ops[1].Src[0] ^= 1
	failed := kernels.Open(ops)

	fmt.Println("failed:", failed)
	for _, op := range ops {
		if op.Err != nil {
			fmt.Println(op.Err) // and op.Dst is zeroed: no unauthenticated plaintext
			continue
		}
		fmt.Println(string(op.Dst))
	}
	// Output:
	// failed: 1
	// first packet
	// kernels: message authentication failed
	// third packet
}
