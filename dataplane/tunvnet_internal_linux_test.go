package dataplane

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"os"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/wirebatch/wirebatch/internal/tunoffload"
)

// seqpacketVnet returns a vnetTUN reading one end of a SOCK_SEQPACKET socket pair, which, like a
// TUN, hands over one whole message per read, and the other end's descriptor to write reads to.
func seqpacketVnet(t *testing.T) (*vnetTUN, int) {
	t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, fd := range fds {
		unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUF, 8<<20)
		unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF, 8<<20)
	}
	f := os.NewFile(uintptr(fds[0]), "seqpacket")
	rc, err := f.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close(); unix.Close(fds[1]) })
	return newVnetFile(f, rc, true), fds[1]
}

// vnetRead is what a TUN read returns: a virtio-net header and a packet.
func vnetRead(h tunoffload.Header, pkt []byte) []byte {
	in := make([]byte, tunoffload.HeaderLen+len(pkt))
	h.Encode(in)
	copy(in[tunoffload.HeaderLen:], pkt)
	return in
}

// TestVnetTUNScatteredReads: whatever the reads (TSO super-packets of a stream, of another stream
// with other header and segment sizes, packets without GSO short and long, more segments than the
// buffers left take), Read and readMore return exactly the packets tunoffload.Split makes of them;
// and once a stream's sizes are known, its super-packets and short packets are read straight into
// the buffers (rbuf, where a read is gathered otherwise, stays untouched).
func TestVnetTUNScatteredReads(t *testing.T) {
	v, w := seqpacketVnet(t)
	rng := rand.New(rand.NewPCG(5, 6))
	bufs, want := make([][]byte, MaxBatch), make([][]byte, MaxBatch)
	for i := range bufs {
		bufs[i] = make([]byte, tunOffset+1500)
		want[i] = make([]byte, tunOffset+1500)
	}
	sizes, wantSizes := make([]int, MaxBatch), make([]int, MaxBatch)
	super := func(version int, options, seg, segs int) []byte {
		p := testIP(version, protoTCP, 7, segs*seg-rng.IntN(seg/2), tcpACK)
		iphl := 20
		gso := uint8(tunoffload.GSOTCPv4)
		if version == 6 {
			iphl, gso = 40, tunoffload.GSOTCPv6
		}
		if options > 0 { // TCP options: the payload moves back
			p = append(p[:iphl+20], append(bytes.Repeat([]byte{1}, options), p[iphl+20:]...)...)
			p[iphl+12] = byte(20+options) / 4 << 4
		}
		for i := iphl + 20 + options; i < len(p); i++ {
			p[i] = byte(rng.Uint32())
		}
		return vnetRead(tunoffload.Header{Flags: tunoffload.FlagNeedsCsum, GSOType: gso, GSOSize: uint16(seg),
			CsumStart: uint16(iphl), CsumOffset: 16}, p)
	}
	plain := func(n int) []byte {
		p := testIP(4, protoUDP, 9, n, 0)
		return vnetRead(tunoffload.Header{}, p)
	}
	type step struct {
		name      string
		in        []byte
		buffers   int  // the buffers the read may fill
		scattered bool // must go straight into the buffers
	}
	var steps []step
	for range 200 {
		switch rng.IntN(8) {
		case 0, 1, 2, 3: // the stream: IPv4, 12 bytes of options, MSS 1368 (MTU 1420)
			steps = append(steps, step{"stream", super(4, 12, 1368, 1+rng.IntN(47)), 48 + rng.IntN(80), true})
		case 4: // another stream: IPv6, no options, its read spilling past the buffers or not
			segs := 1 + rng.IntN(40)
			steps = append(steps, step{"other stream", super(6, 0, 1380, segs), segs + rng.IntN(2)*rng.IntN(80), false})
		case 5: // short packets without GSO
			steps = append(steps, step{"short", plain(rng.IntN(1300)), 1 + rng.IntN(MaxBatch), false})
		case 6: // fewer buffers than segments
			steps = append(steps, step{"few buffers", super(4, 12, 1368, 30+rng.IntN(17)), 1 + rng.IntN(29), false})
		case 7: // a packet without GSO longer than the stream's segments
			steps = append(steps, step{"long", plain(1440), 1 + rng.IntN(MaxBatch), false})
		}
	}
	for _, s := range steps {
		if _, err := unix.Write(w, s.in); err != nil {
			t.Fatal(err)
		}
	}
	untouched := func() bool {
		for _, b := range v.rbuf {
			if b != 0xa5 {
				return false
			}
		}
		return true
	}
	learned := false
	for i, s := range steps {
		wn, werr := tunoffload.Split(bytes.Clone(s.in), want[:s.buffers], wantSizes, tunOffset)
		for j := range v.rbuf {
			v.rbuf[j] = 0xa5
		}
		layout := v.segSize == 1368 && v.hdrLen == 20+32
		read := v.Read
		if i%2 == 1 {
			read = v.readMore
		}
		n, err := read(bufs[:s.buffers], sizes, tunOffset)
		if (err != nil) != (werr != nil) || n != wn {
			t.Fatalf("read %d (%s): %d packets, %v; Split: %d, %v", i, s.name, n, err, wn, werr)
		}
		for k := range n {
			if !bytes.Equal(bufs[k][tunOffset:tunOffset+sizes[k]], want[k][tunOffset:tunOffset+wantSizes[k]]) {
				t.Fatalf("read %d (%s): packet %d differs from Split's", i, s.name, k)
			}
		}
		if layout && s.scattered {
			learned = true
			if !untouched() {
				t.Fatalf("read %d (%s): went through rbuf though its sizes were expected", i, s.name)
			}
		}
		if s.name == "short" && (layout || v.segSize == 1380) && binary.BigEndian.Uint16(s.in[tunoffload.HeaderLen+2:]) < 1400 {
			if !untouched() {
				t.Fatalf("read %d (%s): a short packet went through rbuf", i, s.name)
			}
		}
	}
	if !learned {
		t.Fatal("no read was scattered")
	}
	if n, err := v.readMore(bufs, sizes, tunOffset); n != 0 || err != nil {
		t.Fatalf("readMore with nothing waiting: %d packets, %v", n, err)
	}
}
