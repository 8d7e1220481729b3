//go:build race

package batch

// raceEnabled reports whether the race detector is on; it instruments
// memory accesses and allocates, so allocation counts are skipped under it.
const raceEnabled = true
