//go:build race

package ring

// raceEnabled reports whether the race detector is on; it instruments
// memory accesses and allocates, so allocation counts are skipped under it.
const raceEnabled = true
