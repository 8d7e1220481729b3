//go:build race

package tunvnet

const raceEnabled = true
