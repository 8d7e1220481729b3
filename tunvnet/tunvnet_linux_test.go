// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package tunvnet

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"os"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/wirebatch/wirebatch/dataplane/tuntest"
	"github.com/wirebatch/wirebatch/internal/tunoffload"
)

// fileDev is a FileTUN for a file that is not a TUN.
type fileDev struct{ f *os.File }

func (d fileDev) File() *os.File { return d.f }
func (d fileDev) Close() error   { return d.f.Close() }

// seqpacketVnet returns a TUN reading one end of a SOCK_SEQPACKET socket pair, which, like a
// TUN, hands over one whole message per read, and the other end's descriptor to write reads to.
func seqpacketVnet(t *testing.T) (*TUN, int) {
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
	return newTUN(fileDev{f}, rc, true), fds[1]
}

// vnetRead is what a TUN read returns: a virtio-net header and a packet.
func vnetRead(h tunoffload.Header, pkt []byte) []byte {
	in := make([]byte, tunoffload.HeaderLen+len(pkt))
	h.Encode(in)
	copy(in[tunoffload.HeaderLen:], pkt)
	return in
}

// TestTUNScatteredReads: whatever the reads (TSO super-packets of a stream, of another stream
// with other header and segment sizes, packets without GSO short and long, more segments than the
// buffers left take), Read and TryRead return exactly the packets tunoffload.Split makes of them;
// and once a stream's sizes are known, its super-packets and short packets are read straight into
// the buffers (rbuf, where a read is gathered otherwise, stays untouched).
func TestTUNScatteredReads(t *testing.T) {
	v, w := seqpacketVnet(t)
	rng := rand.New(rand.NewPCG(5, 6))
	bufs, want := make([][]byte, batchSize), make([][]byte, batchSize)
	for i := range bufs {
		bufs[i] = make([]byte, testOffset+1500)
		want[i] = make([]byte, testOffset+1500)
	}
	sizes, wantSizes := make([]int, batchSize), make([]int, batchSize)
	super := func(version int, options, seg, segs int) []byte {
		p := tuntest.Packet(version, protoTCP, 7, segs*seg-rng.IntN(seg/2), tcpACK)
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
		p := tuntest.Packet(4, protoUDP, 9, n, 0)
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
			steps = append(steps, step{"short", plain(rng.IntN(1300)), 1 + rng.IntN(batchSize), false})
		case 6: // fewer buffers than segments
			steps = append(steps, step{"few buffers", super(4, 12, 1368, 30+rng.IntN(17)), 1 + rng.IntN(29), false})
		case 7: // a packet without GSO longer than the stream's segments
			steps = append(steps, step{"long", plain(1440), 1 + rng.IntN(batchSize), false})
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
		wn, werr := tunoffload.Split(bytes.Clone(s.in), want[:s.buffers], wantSizes, testOffset)
		for j := range v.rbuf {
			v.rbuf[j] = 0xa5
		}
		layout := v.segSize == 1368 && v.hdrLen == 20+32
		read := v.Read
		if i%2 == 1 {
			read = v.TryRead
		}
		n, err := read(bufs[:s.buffers], sizes, testOffset)
		if (err != nil) != (werr != nil) || n != wn {
			t.Fatalf("read %d (%s): %d packets, %v; Split: %d, %v", i, s.name, n, err, wn, werr)
		}
		for k := range n {
			if !bytes.Equal(bufs[k][testOffset:testOffset+sizes[k]], want[k][testOffset:testOffset+wantSizes[k]]) {
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
	if n, err := v.TryRead(bufs, sizes, testOffset); n != 0 || err != nil {
		t.Fatalf("TryRead with nothing waiting: %d packets, %v", n, err)
	}
}

// TestTUNWrite: Write coalesces a batch, also one of more than batchSize packets, into a few writes
// of a virtio-net header and a packet each, which segment back into the packets in their order, and
// reports them all written; a write without room for the header fails and writes nothing; after
// Close, reads and writes fail with os.ErrClosed.
func TestTUNWrite(t *testing.T) {
	v, r := seqpacketVnet(t)
	var in [][]byte
	for i := range 300 {
		in = append(in, segment(4+2*(i/150), 1000, uint32(i%150*1200), 1200, tcpACK, uint16(i)))
	}
	if n, err := v.Write(withHeadroom(in...), testOffset); n != len(in) || err != nil {
		t.Fatalf("Write: %d, %v; want %d, nil", n, err, len(in))
	}
	var got [][]byte
	writes := 0
	msg := make([]byte, tunoffload.HeaderLen+65535)
	for ; ; writes++ {
		n, err := unix.Read(r, msg)
		if err == unix.EAGAIN {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, resplit(t, msg[:n])...)
	}
	if len(got) != len(in) || writes > len(in)/40 {
		t.Fatalf("%d packets written, %d read back in %d writes", len(in), len(got), writes)
	}
	for i := range got {
		if !bytes.Equal(got[i], in[i]) {
			t.Fatalf("packet %d differs", i)
		}
	}
	if failed, err := v.WriteGRO(withHeadroom(in[0]), tunoffload.HeaderLen-1); failed != 1 || err == nil {
		t.Fatalf("a write without headroom: %d failed, %v", failed, err)
	}
	if _, err := unix.Read(r, msg); err != unix.EAGAIN {
		t.Fatalf("a write without headroom wrote something (%v)", err)
	}
	if err := v.Close(); err != nil {
		t.Fatal(err)
	}
	bufs, sizes := [][]byte{make([]byte, testOffset+1500)}, []int{0}
	if _, err := v.Read(bufs, sizes, testOffset); !errors.Is(err, os.ErrClosed) {
		t.Errorf("Read after Close: %v, want os.ErrClosed", err)
	}
	if failed, err := v.WriteGRO(withHeadroom(in[0]), testOffset); failed != 1 || !errors.Is(err, os.ErrClosed) {
		t.Errorf("WriteGRO after Close: %d failed, %v; want 1, os.ErrClosed", failed, err)
	}
}

// TestNewNotVnet: New wraps no file that is not a TUN with virtio-net headers.
func TestNewNotVnet(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	if v, ok := New(fileDev{r}); ok || v != nil {
		t.Error("New wrapped a pipe")
	}
	if v, ok := New(fileDev{}); ok || v != nil {
		t.Error("New wrapped a device without a file")
	}
}
