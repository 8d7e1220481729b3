// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

//go:build race

package batch

// raceEnabled reports whether the race detector is on; it instruments
// memory accesses and allocates, so allocation counts are skipped under it.
const raceEnabled = true
