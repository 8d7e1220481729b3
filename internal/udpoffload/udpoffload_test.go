//go:build linux

package udpoffload

import (
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

func TestSegmentSizeIgnoresOtherMessages(t *testing.T) {
	if n := SegmentSize(nil); n != 0 {
		t.Errorf("SegmentSize(nil) = %d", n)
	}
	// A UDP_SEGMENT message is not a UDP_GRO one.
	if n := SegmentSize(PutSegmentSize(make([]byte, SegmentControlSize), 1200)); n != 0 {
		t.Errorf("SegmentSize(UDP_SEGMENT message) = %d, want 0", n)
	}
	// A length field larger than the buffer is rejected, not followed.
	bad := PutSegmentSize(make([]byte, SegmentControlSize), 1200)
	bad[0] = 0xff
	if n := SegmentSize(bad); n != 0 {
		t.Errorf("SegmentSize(corrupt length) = %d, want 0", n)
	}
}

func TestSegmentSizeReadsGRO(t *testing.T) {
	oob := make([]byte, GROControlSize)
	h := (*unix.Cmsghdr)(unsafe.Pointer(&oob[0]))
	h.Level, h.Type = unix.SOL_UDP, unix.UDP_GRO
	h.SetLen(unix.CmsgLen(4))
	*(*int32)(unsafe.Pointer(&oob[unix.CmsgLen(0)])) = 1372
	if n := SegmentSize(oob); n != 1372 {
		t.Errorf("SegmentSize(UDP_GRO 1372) = %d", n)
	}
}

func TestPutSegmentSizeLayout(t *testing.T) {
	oob := PutSegmentSize(make([]byte, SegmentControlSize+8), 1400)
	if len(oob) != SegmentControlSize {
		t.Fatalf("used %d bytes, want %d", len(oob), SegmentControlSize)
	}
	h := (*unix.Cmsghdr)(unsafe.Pointer(&oob[0]))
	if h.Level != unix.SOL_UDP || h.Type != unix.UDP_SEGMENT || int(h.Len) != unix.CmsgLen(2) {
		t.Fatalf("header %+v", *h)
	}
	if got := *(*uint16)(unsafe.Pointer(&oob[unix.CmsgLen(0)])); got != 1400 {
		t.Fatalf("segment size %d", got)
	}
}
