// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package payload

import (
	"fmt"
	"strconv"
	"strings"
)

// IP and UDP header bytes in front of a payload; IMIX sizes are IP packet
// sizes, so these are subtracted to get payload sizes.
const (
	udpIPv4Overhead = 20 + 8
	udpIPv6Overhead = 40 + 8
)

// imixPacketSizes is the "simple IMIX" mix of IP packet sizes 64, 576 and
// 1500 bytes in the ratio 7:4:1, interleaved so that a short window of the
// schedule already has the mix's average size.
var imixPacketSizes = []int{64, 576, 64, 1500, 64, 576, 64, 64, 576, 64, 576, 64}

// DefaultSize is the payload size loadgen sends when not told: what fills
// a 1500-byte IP packet, the Ethernet MTU, without fragmenting (1472 bytes
// over IPv4, 1452 over IPv6).
func DefaultSize(ipv6 bool) int {
	if ipv6 {
		return 1500 - udpIPv6Overhead
	}
	return 1500 - udpIPv4Overhead
}

// ParseSizes turns a -size argument into the repeating schedule of payload
// sizes a sender cycles through, packet by packet:
//
//   - "N": every payload is N bytes (UDP payload, as iperf3 -l).
//   - "imix": IP packets of 64, 576 and 1500 bytes in the ratio 7:4:1, so
//     payloads of those sizes minus the IP and UDP headers of the address
//     family (ipv6 selects 48 bytes instead of 28), but at least HeaderSize.
//   - "N1,N2,...": payloads of the listed sizes in turn.
func ParseSizes(spec string, ipv6 bool) ([]int, error) {
	if spec == "imix" {
		overhead := udpIPv4Overhead
		if ipv6 {
			overhead = udpIPv6Overhead
		}
		sizes := make([]int, len(imixPacketSizes))
		for i, s := range imixPacketSizes {
			sizes[i] = max(s-overhead, HeaderSize)
		}
		return sizes, nil
	}
	var sizes []int
	for field := range strings.SplitSeq(spec, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(field))
		if err != nil {
			return nil, fmt.Errorf("size %q: want a number of bytes, a comma-separated list of them, or imix", spec)
		}
		if n < HeaderSize || n > MaxSize {
			return nil, fmt.Errorf("size %d: payloads must be %d to %d bytes", n, HeaderSize, MaxSize)
		}
		sizes = append(sizes, n)
	}
	return sizes, nil
}

// MeanSize is the average payload size of a schedule, 0 for an empty one.
func MeanSize(sizes []int) float64 {
	if len(sizes) == 0 {
		return 0
	}
	total := 0
	for _, s := range sizes {
		total += s
	}
	return float64(total) / float64(len(sizes))
}
