// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

//go:build !race

package kernels_test

// raceEnabled reports whether the race detector is on (see race_on_test.go).
const raceEnabled = false
