//go:build !race

package kernels_test

// raceEnabled reports whether the race detector is on (see race_on_test.go).
const raceEnabled = false
