// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package payload

import (
	"errors"
	"slices"
	"testing"
)

func TestRoundTrip(t *testing.T) {
	for _, size := range []int{HeaderSize, HeaderSize + 1, 64, 1400, MaxSize} {
		p := make([]byte, size)
		Fill(p)
		want := Header{Run: 7, Flow: 65535, Length: uint16(size), Seq: 1<<40 + 3, SendNanos: 123456789}
		Encode(p, want)
		got, err := Decode(p)
		if err != nil || got != want {
			t.Fatalf("size %d: Decode = %+v, %v; want %+v", size, got, err, want)
		}
	}
}

func TestDecodeRejectsEveryBitFlip(t *testing.T) {
	p := make([]byte, 80)
	Fill(p)
	Encode(p, Header{Run: 1, Flow: 2, Length: uint16(len(p)), Seq: 3, SendNanos: 4})
	for bit := range len(p) * 8 {
		p[bit/8] ^= 1 << (bit % 8)
		if _, err := Decode(p); !errors.Is(err, ErrCorrupt) {
			t.Errorf("flipping bit %d: Decode error = %v, want ErrCorrupt", bit, err)
		}
		p[bit/8] ^= 1 << (bit % 8)
	}
}

func TestDecodeRejectsTruncatedAndShort(t *testing.T) {
	p := make([]byte, 100)
	Fill(p)
	Encode(p, Header{Run: 1, Length: uint16(len(p))})
	for _, n := range []int{0, 4, HeaderSize - 1, HeaderSize, 99} {
		if _, err := Decode(p[:n]); !errors.Is(err, ErrCorrupt) {
			t.Errorf("first %d bytes: Decode error = %v, want ErrCorrupt", n, err)
		}
	}
}

func TestParseSizes(t *testing.T) {
	tests := []struct {
		spec string
		ipv6 bool
		want []int
	}{
		{"64", false, []int{64}},
		{"64, 1400", false, []int{64, 1400}},
		{"imix", false, []int{36, 548, 36, 1472, 36, 548, 36, 36, 548, 36, 548, 36}},
		{"imix", true, []int{32, 528, 32, 1452, 32, 528, 32, 32, 528, 32, 528, 32}},
	}
	for _, tt := range tests {
		got, err := ParseSizes(tt.spec, tt.ipv6)
		if err != nil || !slices.Equal(got, tt.want) {
			t.Errorf("ParseSizes(%q, %v) = %v, %v; want %v", tt.spec, tt.ipv6, got, err, tt.want)
		}
	}
	for _, bad := range []string{"", "x", "31", "65508", "64,", "-1"} {
		if _, err := ParseSizes(bad, false); err == nil {
			t.Errorf("ParseSizes(%q) succeeded, want an error", bad)
		}
	}
}

func TestIMIXRatio(t *testing.T) {
	counts := map[int]int{}
	for _, s := range imixPacketSizes {
		counts[s]++
	}
	if counts[64] != 7 || counts[576] != 4 || counts[1500] != 1 {
		t.Errorf("IMIX counts = %v, want 64:7 576:4 1500:1", counts)
	}
}

func BenchmarkDecode1400(b *testing.B) {
	p := make([]byte, 1400)
	Fill(p)
	Encode(p, Header{Run: 1, Length: uint16(len(p))})
	b.SetBytes(int64(len(p)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Decode(p); err != nil {
			b.Fatal(err)
		}
	}
}
