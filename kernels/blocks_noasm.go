//go:build !amd64 || !gc || purego

package kernels

func aesBlocks(k *Key, dst, src [][16]byte)    { aesBlocksGeneric(k, dst, src) }
func chachaBlocks(k *Key, dst, src [][16]byte) { chachaBlocksGeneric(k, dst, src) }
