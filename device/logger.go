// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package device

import (
	"log"
	"os"
)

// Logger receives a Device's log lines: Verbosef for what the device did (handshakes, configuration
// changes, state changes), Errorf for what went wrong. Both are Printf-style, safe for concurrent
// use, and need no trailing newline. A nil function, or a nil *Logger, discards its lines.
type Logger struct {
	Verbosef func(format string, args ...any)
	Errorf   func(format string, args ...any)
}

// Log levels for NewLogger: each includes the ones before it.
const (
	LogLevelSilent = iota
	LogLevelError
	LogLevelVerbose
)

// DiscardLogf is a Logger function that drops its line.
func DiscardLogf(format string, args ...any) {}

// NewLogger returns a Logger that writes the lines of level and below to standard output, each
// starting with "DEBUG: " or "ERROR: ", then prepend, and stamped with the date and time.
func NewLogger(level int, prepend string) *Logger {
	to := func(tag string) func(string, ...any) {
		return log.New(os.Stdout, tag+": "+prepend, log.Ldate|log.Ltime).Printf
	}
	l := &Logger{Verbosef: DiscardLogf, Errorf: DiscardLogf}
	if level >= LogLevelError {
		l.Errorf = to("ERROR")
	}
	if level >= LogLevelVerbose {
		l.Verbosef = to("DEBUG")
	}
	return l
}

// orDiscard returns a copy of l with every nil function replaced by DiscardLogf.
func (l *Logger) orDiscard() Logger {
	out := Logger{Verbosef: DiscardLogf, Errorf: DiscardLogf}
	if l != nil && l.Verbosef != nil {
		out.Verbosef = l.Verbosef
	}
	if l != nil && l.Errorf != nil {
		out.Errorf = l.Errorf
	}
	return out
}
