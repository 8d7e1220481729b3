// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

//go:build !amd64 || !gc || purego

package kernels

func aesBlocks(k *Key, dst, src [][16]byte)    { aesBlocksGeneric(k, dst, src) }
func chachaBlocks(k *Key, dst, src [][16]byte) { chachaBlocksGeneric(k, dst, src) }
