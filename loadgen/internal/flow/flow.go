// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

// Package flow accounts the sequence numbers that arrive on one flow: unique
// packets, duplicates, and reordering as defined by RFC 4737.
//
// A Tracker sees each packet's sequence number once, in arrival order.
// Following RFC 4737 section 3.3, it keeps NextExp, the next expected
// sequence number: a packet with s >= NextExp is in order and moves NextExp to
// s+1; a packet with s < NextExp is reordered. Duplicates are recognised with a
// bitmap of the last WindowSize sequence numbers below NextExp (the sliding
// window of RFC 6479's anti-replay check) and are excluded from reordering,
// as RFC 4737 section 3.3 requires; packets older than the window cannot be
// told from duplicates and are counted as unique but BeyondWindow.
package flow

// WindowSize is how many sequence numbers below NextExp a Tracker remembers
// for duplicate detection.
const WindowSize = 1 << 13

// historySize is how many in-order arrivals a Tracker remembers to measure
// reordering extent; a reordered packet whose extent reaches back further is
// reported with the extent of the oldest remembered arrival, a lower bound.
const historySize = 1 << 10

// Counts are a flow's totals. They add up over flows with Add.
type Counts struct {
	// Received counts unique packets (duplicates excluded).
	Received uint64 `json:"received"`
	// Duplicates counts packets whose sequence number had already arrived.
	Duplicates uint64 `json:"duplicates"`
	// Reordered counts unique packets that arrived with a sequence number
	// below NextExp (RFC 4737 section 3.3, "reordered packets").
	Reordered uint64 `json:"reordered"`
	// MaxReorderExtent is the largest reordering extent (RFC 4737 section
	// 4.2.1): how many arrivals earlier the first packet with a larger
	// sequence number arrived.
	MaxReorderExtent uint64 `json:"max_reorder_extent"`
	// BeyondWindow counts packets older than the duplicate window, counted
	// as unique and reordered because they can not be checked.
	BeyondWindow uint64 `json:"beyond_window"`
	// Expected is the highest sequence number seen plus one, summed over
	// flows: Expected-Received packets are missing so far.
	Expected uint64 `json:"expected"`
}

// Add adds o's counts to c, taking the larger MaxReorderExtent.
func (c *Counts) Add(o Counts) {
	c.Received += o.Received
	c.Duplicates += o.Duplicates
	c.Reordered += o.Reordered
	c.MaxReorderExtent = max(c.MaxReorderExtent, o.MaxReorderExtent)
	c.BeyondWindow += o.BeyondWindow
	c.Expected += o.Expected
}

// Missing is how many sequence numbers below the highest seen have not arrived.
func (c Counts) Missing() uint64 {
	if c.Received >= c.Expected {
		return 0
	}
	return c.Expected - c.Received
}

// inOrderArrival is a packet that advanced NextExp and its unique-arrival
// position; the history of them has increasing seq and position.
type inOrderArrival struct {
	seq      uint64
	position uint64
}

// Tracker accounts one flow. The zero value is ready to use and expects
// sequence numbers from 0.
type Tracker struct {
	counts Counts
	// nextExp is RFC 4737's NextExp; counts.Expected mirrors it.
	nextExp uint64
	// seen has bit s%WindowSize set for each sequence number s that arrived in
	// [nextExp-WindowSize, nextExp).
	seen [WindowSize / 64]uint64
	// history is a ring of the last historySize in-order arrivals; the
	// newest is at (historyNext-1)%historySize.
	history     [historySize]inOrderArrival
	historyNext uint64
}

// Counts returns the flow's totals so far.
func (t *Tracker) Counts() Counts { return t.counts }

// Observe accounts one arrival of sequence number seq.
func (t *Tracker) Observe(seq uint64) {
	position := t.counts.Received // RFC 4737 arrival position among unique packets
	if seq >= t.nextExp {
		t.forget(t.nextExp, seq)
		t.mark(seq)
		t.nextExp = seq + 1
		t.counts.Expected = t.nextExp
		t.counts.Received++
		t.history[t.historyNext%historySize] = inOrderArrival{seq: seq, position: position}
		t.historyNext++
		return
	}
	if t.nextExp-seq > WindowSize {
		t.counts.BeyondWindow++
	} else {
		if t.marked(seq) {
			t.counts.Duplicates++
			return
		}
		t.mark(seq)
	}
	t.counts.Received++
	t.counts.Reordered++
	t.counts.MaxReorderExtent = max(t.counts.MaxReorderExtent, position-t.firstArrivalAfter(seq))
}

// firstArrivalAfter returns the arrival position of the earliest in-order
// packet with a sequence number above seq. The earliest arrival of any packet
// above seq is always an in-order one: a reordered packet above seq arrived
// after the in-order packet that had raised NextExp past it.
func (t *Tracker) firstArrivalAfter(seq uint64) uint64 {
	n := min(t.historyNext, historySize)
	oldest := t.historyNext - n
	// Binary search over ring entries oldest..historyNext-1 for the first seq > seq.
	lo, hi := oldest, t.historyNext-1
	for lo < hi {
		mid := lo + (hi-lo)/2
		if t.history[mid%historySize].seq > seq {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return t.history[lo%historySize].position
}

// forget clears the window bits of sequence numbers [from, to), whose slots
// last held numbers WindowSize lower, before NextExp moves past them.
func (t *Tracker) forget(from, to uint64) {
	if to-from >= WindowSize {
		clear(t.seen[:])
		return
	}
	for from < to {
		word, bit := (from%WindowSize)/64, from%64
		// Clear up to the end of this word or of the range, whichever is first.
		n := min(64-bit, to-from)
		mask := ^uint64(0)
		if n < 64 {
			mask = (1<<n - 1) << bit
		}
		t.seen[word] &^= mask
		from += n
	}
}

func (t *Tracker) mark(seq uint64) {
	t.seen[(seq%WindowSize)/64] |= 1 << (seq % 64)
}

func (t *Tracker) marked(seq uint64) bool {
	return t.seen[(seq%WindowSize)/64]&(1<<(seq%64)) != 0
}
