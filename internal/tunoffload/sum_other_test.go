//go:build !amd64 || purego

package tunoffload

// vectorTiers returns switches for the vector kernels the CPU runs: none here.
func vectorTiers() []func(on bool) { return nil }
