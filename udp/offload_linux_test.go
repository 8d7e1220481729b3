// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package udp

import (
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

func TestGROSegmentIgnoresOtherMessages(t *testing.T) {
	if n := groSegment(nil); n != 0 {
		t.Errorf("groSegment(nil) = %d", n)
	}
	// A UDP_SEGMENT message is not a UDP_GRO one.
	if n := groSegment(putSegment(make([]byte, controlSpace), 1200)); n != 0 {
		t.Errorf("groSegment(UDP_SEGMENT message) = %d, want 0", n)
	}
	// A length field larger than the buffer is rejected, not followed.
	bad := putSegment(make([]byte, controlSpace), 1200)
	bad[0] = 0xff
	if n := groSegment(bad); n != 0 {
		t.Errorf("groSegment(corrupt length) = %d, want 0", n)
	}
}

func TestGROSegmentReadsGRO(t *testing.T) {
	if unix.CmsgSpace(4) > controlSpace {
		t.Fatalf("a UDP_GRO control message takes %d bytes, more than the %d of controlSpace", unix.CmsgSpace(4), controlSpace)
	}
	oob := make([]byte, unix.CmsgSpace(4))
	h := (*unix.Cmsghdr)(unsafe.Pointer(&oob[0]))
	h.Level, h.Type = unix.SOL_UDP, unix.UDP_GRO
	h.SetLen(unix.CmsgLen(4))
	*(*int32)(unsafe.Pointer(&oob[unix.CmsgLen(0)])) = 1372
	if n := groSegment(oob); n != 1372 {
		t.Errorf("groSegment(UDP_GRO 1372) = %d", n)
	}
}

func TestPutSegmentLayout(t *testing.T) {
	oob := putSegment(make([]byte, controlSpace), 1400)
	if len(oob) != unix.CmsgSpace(2) {
		t.Fatalf("used %d bytes, want %d", len(oob), unix.CmsgSpace(2))
	}
	h := (*unix.Cmsghdr)(unsafe.Pointer(&oob[0]))
	if h.Level != unix.SOL_UDP || h.Type != unix.UDP_SEGMENT || int(h.Len) != unix.CmsgLen(2) {
		t.Fatalf("header %+v", *h)
	}
	if got := *(*uint16)(unsafe.Pointer(&oob[unix.CmsgLen(0)])); got != 1400 {
		t.Fatalf("segment size %d", got)
	}
}
