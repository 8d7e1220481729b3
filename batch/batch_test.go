package batch

import (
	"bytes"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/net/ipv4"
	"golang.zx2c4.com/wireguard/tun/tuntest"
)

// sealedLen returns the WireGuard datagram length of a plaintext of n bytes:
// header, plaintext padded to a multiple of 16, tag (whitepaper 5.4.6).
func sealedLen(n int) int {
	return TransportHeaderLen + (n+PaddingMultiple-1)/PaddingMultiple*PaddingMultiple + TagLen
}

func TestLayout(t *testing.T) {
	if Headroom < VirtioNetHeaderLen || Headroom < TransportHeaderLen {
		t.Errorf("Headroom %d cannot hold the virtio-net (%d) or WireGuard (%d) header", Headroom, VirtioNetHeaderLen, TransportHeaderLen)
	}
	if got := sealedLen(MaxPacketLen); got > BufferLen {
		t.Errorf("a sealed %d-byte packet is %d bytes, more than BufferLen %d", MaxPacketLen, got, BufferLen)
	}
	if BufferLen != 1536 || BufferLen%64 != 0 {
		t.Errorf("BufferLen = %d, want 1536, a multiple of the cache line", BufferLen)
	}
	if BatchBytes < MaxPackets*BufferLen || DefaultMaxBytes/BatchBytes < 1 || BatchBytesFor(BufferLen) != BatchBytes {
		t.Errorf("BatchBytes = %d, BatchBytesFor(BufferLen) = %d", BatchBytes, BatchBytesFor(BufferLen))
	}
	if got := Headroom + sealedLen(65535) - TransportHeaderLen; got > MaxBufferLen || MaxBufferLen%64 != 0 {
		t.Errorf("MaxBufferLen = %d: not a multiple of 64, or less than the %d bytes the largest IP packet needs", MaxBufferLen, got)
	}
	b := New()
	b.SetLen(MaxPackets)
	checkBuffers(t, b, BufferLen)
}

// checkBuffers checks that the MaxPackets buffers of b (all in use) are
// bufferLen bytes long with no capacity beyond, adjacent in one block, and
// each starts on a cache line.
func checkBuffers(t *testing.T, b *Batch, bufferLen int) {
	t.Helper()
	for i := range MaxPackets {
		buf := b.Buffer(i)
		if len(buf) != bufferLen || cap(buf) != bufferLen {
			t.Fatalf("buffer %d: len %d cap %d, want %d", i, len(buf), cap(buf), bufferLen)
		}
		if i > 0 && uintptr(unsafe.Pointer(&buf[0]))-uintptr(unsafe.Pointer(&b.Buffer(i - 1)[0])) != uintptr(bufferLen) {
			t.Fatalf("buffers %d and %d are not adjacent", i-1, i)
		}
		if uintptr(unsafe.Pointer(&buf[0]))%64 != 0 {
			t.Fatalf("buffer %d does not start on a 64-byte cache line", i)
		}
	}
}

// TestBuffers: Buffers hands out every whole buffer, in use or not, as the
// batch's own memory, and leaves the batch's packets alone.
func TestBuffers(t *testing.T) {
	b := New()
	b.SetLen(3)
	b.SetSize(1, 4)
	copy(b.Packet(1), "wire")
	all := make([][]byte, MaxPackets+1)
	if n := b.Buffers(all); n != MaxPackets || all[MaxPackets] != nil {
		t.Fatalf("Buffers into %d slots copied %d, want %d", len(all), n, MaxPackets)
	}
	seen := make(map[*byte]bool)
	for i, buf := range all[:MaxPackets] {
		if len(buf) != BufferLen || cap(buf) != BufferLen || seen[&buf[0]] {
			t.Fatalf("buffer %d: len %d cap %d, seen before %v", i, len(buf), cap(buf), seen[&buf[0]])
		}
		seen[&buf[0]] = true
	}
	if got := string(all[1][Headroom : Headroom+4]); got != "wire" {
		t.Errorf("buffer 1 holds %q where packet 1 is, want %q", got, "wire")
	}
	few := make([][]byte, 2)
	if n := b.Buffers(few); n != 2 || &few[1][0] != &all[1][0] {
		t.Fatalf("Buffers into 2 slots copied %d, or another buffer 1", n)
	}
	if b.Len() != 3 || b.Start(1) != Headroom || string(b.Packet(1)) != "wire" {
		t.Errorf("after Buffers: Len %d, packet 1 %q at %d", b.Len(), b.Packet(1), b.Start(1))
	}
}

// TestSealShape walks a packet through the outbound shape changes of the
// data plane (pad, seal in place, prepend header) and back (pull header,
// open in place, trim) at every length, checking bounds and bytes.
func TestSealShape(t *testing.T) {
	b := New()
	b.SetLen(1)
	for n := 0; n <= MaxPacketLen; n++ {
		b.Reset()
		b.SetLen(1)
		b.SetSize(0, n)
		pkt := b.Packet(0)
		for k := range pkt {
			pkt[k] = byte(k)
		}
		padded := (n + PaddingMultiple - 1) / PaddingMultiple * PaddingMultiple
		b.SetSize(0, padded+TagLen) // padding and tag written in the tailroom
		dgram := b.Push(0, TransportHeaderLen)
		if len(dgram) != sealedLen(n) || b.Start(0) != 0 {
			t.Fatalf("n=%d: datagram of %d bytes at %d, want %d at 0", n, len(dgram), b.Start(0), sealedLen(n))
		}
		dgram[0] = 4 // message type of a transport data message
		hdr := b.Pull(0, TransportHeaderLen)
		if len(hdr) != TransportHeaderLen || hdr[0] != 4 || cap(hdr) != TransportHeaderLen {
			t.Fatalf("n=%d: Pull returned %d bytes (cap %d) starting %d", n, len(hdr), cap(hdr), hdr[0])
		}
		b.SetSize(0, n)
		if b.Start(0) != Headroom {
			t.Fatalf("n=%d: opened packet starts at %d", n, b.Start(0))
		}
		for k, v := range b.Packet(0) {
			if v != byte(k) {
				t.Fatalf("n=%d: byte %d changed", n, k)
			}
		}
	}
}

func TestBoundsPanic(t *testing.T) {
	for name, f := range map[string]func(b *Batch){
		"Packet past Len":      func(b *Batch) { b.Packet(2) },
		"Meta negative":        func(b *Batch) { b.Meta(-1) },
		"SetLen past Cap":      func(b *Batch) { b.SetLen(MaxPackets + 1) },
		"SetSize past buffer":  func(b *Batch) { b.SetSize(0, BufferLen-Headroom+1) },
		"SetSize negative":     func(b *Batch) { b.SetSize(0, -1) },
		"Push past headroom":   func(b *Batch) { b.Push(0, Headroom+1) },
		"Pull past packet":     func(b *Batch) { b.SetSize(1, 3); b.Pull(1, 4) },
		"TUNReadDone past Cap": func(b *Batch) { b.TUNReadDone(MaxPackets + 1) },
		"UDPReadDone negative": func(b *Batch) { b.UDPReadDone(-1) },
		"TUNWrite not at Headroom": func(b *Batch) {
			b.Push(1, 1)
			b.TUNWriteArgs()
		},
	} {
		func() {
			defer func() {
				r := recover()
				if s, ok := r.(string); !ok || !strings.HasPrefix(s, "batch: ") {
					t.Errorf("%s: recovered %v, want a batch: panic", name, r)
				}
			}()
			b := New()
			b.SetLen(2)
			f(b)
		}()
	}
}

func TestSetLenStartsClean(t *testing.T) {
	b := New()
	b.SetLen(3)
	b.Push(1, 4)
	*b.Meta(1) = Meta{Counter: 7, Peer: 3, Verdict: 2, Endpoint: netip.MustParseAddrPort("192.0.2.1:51820")}
	b.Reset()
	b.SetLen(3)
	if b.Start(1) != Headroom || len(b.Packet(1)) != 0 || *b.Meta(1) != (Meta{}) {
		t.Fatalf("reused packet: start %d, len %d, meta %+v", b.Start(1), len(b.Packet(1)), *b.Meta(1))
	}
}

func TestFilter(t *testing.T) {
	b := New()
	b.SetLen(10)
	for i := range 10 {
		b.SetSize(i, 1)
		b.Packet(i)[0] = byte(i)
		b.Meta(i).Counter = uint64(i)
	}
	var seen []int
	n := b.Filter(func(i int) bool {
		seen = append(seen, i)
		return b.Meta(i).Counter%3 == 0
	})
	if n != 4 || b.Len() != 4 || len(seen) != 10 {
		t.Fatalf("kept %d (Len %d) after %d calls, want 4 after 10", n, b.Len(), len(seen))
	}
	buffers := make(map[*byte]bool)
	for i, want := range []int{0, 3, 6, 9} {
		if b.Packet(i)[0] != byte(want) || b.Meta(i).Counter != uint64(want) {
			t.Errorf("packet %d is %d with counter %d, want %d", i, b.Packet(i)[0], b.Meta(i).Counter, want)
		}
	}
	// Every buffer is still owned once: none lost, none shared.
	b.SetLen(MaxPackets)
	for i := range MaxPackets {
		buffers[&b.Buffer(i)[0]] = true
	}
	if len(buffers) != MaxPackets {
		t.Fatalf("%d distinct buffers after Filter, want %d", len(buffers), MaxPackets)
	}
}

// TestTUNShapes reads packets from and writes them to wireguard-go's
// channel TUN device through the batch's argument shapes.
func TestTUNShapes(t *testing.T) {
	dev := tuntest.NewChannelTUN()
	src, dst := netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.0.2")
	ping := tuntest.Ping(dst, src)
	go func() { dev.Outbound <- ping }() // what the device hands to its reader

	b := New()
	bufs, sizes, offset := b.TUNReadArgs()
	n, err := dev.TUN().Read(bufs, sizes, offset)
	if err != nil {
		t.Fatal(err)
	}
	b.TUNReadDone(n)
	if b.Len() != 1 || b.Start(0) != Headroom || !bytes.Equal(b.Packet(0), ping) {
		t.Fatalf("read %d packets, first at %d: %x", b.Len(), b.Start(0), b.Packet(0))
	}

	// Seal-like round trip leaves the packet at Headroom again.
	b.Push(0, TransportHeaderLen)
	b.Pull(0, TransportHeaderLen)
	bufs, offset = b.TUNWriteArgs()
	errc := make(chan error, 1)
	go func() { // the channel device hands each written packet over unbuffered
		_, err := dev.TUN().Write(bufs, offset)
		errc <- err
	}()
	select {
	case got := <-dev.Inbound:
		if !bytes.Equal(got, ping) {
			t.Fatalf("device got %x, want %x", got, ping)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("nothing written to the device")
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
}

// TestUDPShapes sends a batch of datagrams over loopback with WriteBatch and
// receives them into another batch with ReadBatch.
func TestUDPShapes(t *testing.T) {
	recv, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Skipf("no IPv4 loopback: %v", err)
	}
	defer recv.Close()
	send, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer send.Close()
	to := recv.LocalAddr().(*net.UDPAddr).AddrPort()
	from := send.LocalAddr().(*net.UDPAddr).AddrPort()

	out := New()
	const count = 5
	out.SetLen(count)
	for i := range count {
		dgram := out.Push(i, TransportHeaderLen) // headroom only: 16 bytes
		dgram = dgram[:len(dgram)+100*i]         // and some tailroom
		out.SetSize(i, len(dgram))
		for k := range dgram {
			dgram[k] = byte(i + k)
		}
		out.Meta(i).Endpoint = to
	}
	msgs := out.UDPWriteArgs()
	for sent := 0; sent < count; {
		n, err := ipv4.NewPacketConn(send).WriteBatch(msgs[sent:], 0)
		if err != nil {
			t.Fatal(err)
		}
		sent += n
	}

	recv.SetReadDeadline(time.Now().Add(10 * time.Second))
	conn := ipv4.NewPacketConn(recv)
	got := 0
	for got < count {
		part := New()
		n, err := conn.ReadBatch(part.UDPReadArgs(), 0)
		if err != nil {
			t.Fatal(err)
		}
		part.UDPReadDone(n)
		for i := range n {
			if part.Start(i) != 0 || part.Meta(i).Endpoint != from {
				t.Fatalf("datagram %d at %d from %v, want at 0 from %v", got+i, part.Start(i), part.Meta(i).Endpoint, from)
			}
			if !bytes.Equal(part.Packet(i), out.Packet(got+i)) {
				t.Fatalf("datagram %d: got %d bytes, sent %d", got+i, len(part.Packet(i)), len(out.Packet(got+i)))
			}
		}
		got += n
	}
}

func TestUDPWriteArgsAddresses(t *testing.T) {
	b := New()
	eps := []netip.AddrPort{
		netip.MustParseAddrPort("192.0.2.7:51820"),
		netip.MustParseAddrPort("[2001:db8::1%eth0]:443"),
		{},
	}
	b.SetLen(len(eps))
	for i, ep := range eps {
		b.Meta(i).Endpoint = ep
	}
	msgs := b.UDPWriteArgs()
	for i, ep := range eps {
		if !ep.IsValid() {
			if msgs[i].Addr != nil {
				t.Errorf("message %d: Addr %v for no endpoint", i, msgs[i].Addr)
			}
			continue
		}
		got := msgs[i].Addr.(*net.UDPAddr).AddrPort()
		if got != ep {
			t.Errorf("message %d: Addr %v, want %v", i, got, ep)
		}
	}
}

func TestUDPReadDoneEndpoints(t *testing.T) {
	b := New()
	msgs := b.UDPReadArgs()
	msgs[0].Addr = &net.UDPAddr{IP: net.ParseIP("::ffff:192.0.2.7"), Port: 51820}
	msgs[1].Addr = &net.UDPAddr{IP: net.ParseIP("2001:db8::1"), Port: 443, Zone: "eth0"}
	msgs[2].Addr = nil
	msgs[0].N, msgs[1].N, msgs[2].N = 32, 48, 64
	b.UDPReadDone(3)
	for i, want := range []netip.AddrPort{
		netip.MustParseAddrPort("192.0.2.7:51820"),
		netip.MustParseAddrPort("[2001:db8::1%eth0]:443"),
		{},
	} {
		if got := b.Meta(i).Endpoint; got != want {
			t.Errorf("packet %d: Endpoint %v, want %v", i, got, want)
		}
		if len(b.Packet(i)) != msgs[i].N || b.Start(i) != 0 {
			t.Errorf("packet %d: %d bytes at %d, want %d at 0", i, len(b.Packet(i)), b.Start(i), msgs[i].N)
		}
	}
}

func TestShapesAllocateNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	b := New()
	ep := netip.MustParseAddrPort("[2001:db8::1]:51820")
	src := &net.UDPAddr{IP: net.ParseIP("::ffff:192.0.2.7"), Port: 51820}
	allocs := testing.AllocsPerRun(100, func() {
		bufs, sizes, _ := b.TUNReadArgs()
		for i := range 64 {
			sizes[i] = len(bufs[i]) / 2
		}
		b.TUNReadDone(64)
		for i := range 64 {
			b.Push(i, TransportHeaderLen)
			b.Meta(i).Endpoint = ep
		}
		b.UDPWriteArgs()
		msgs := b.UDPReadArgs()
		for i := range 64 {
			msgs[i].Addr, msgs[i].N = src, 100
		}
		b.UDPReadDone(64)
		for i := range 64 {
			b.Pull(i, TransportHeaderLen)
		}
		b.TUNWriteArgs()
		b.Filter(func(i int) bool { return i%2 == 0 })
	})
	if allocs != 0 {
		t.Errorf("%v allocations per round of batch shapes, want 0", allocs)
	}
}

// BenchmarkShapes measures the bookkeeping a full batch costs on its way
// from a TUN read to a UDP write and from a UDP read to a TUN write, per
// packet.
func BenchmarkShapes(b *testing.B) {
	bt := New()
	ep := netip.MustParseAddrPort("192.0.2.7:51820")
	src := &net.UDPAddr{IP: net.IPv4(192, 0, 2, 7), Port: 51820}
	b.ReportAllocs()
	for b.Loop() {
		_, sizes, _ := bt.TUNReadArgs()
		for i := range MaxPackets {
			sizes[i] = 1420
		}
		bt.TUNReadDone(MaxPackets)
		for i := range MaxPackets {
			bt.SetSize(i, 1424+TagLen)
			bt.Push(i, TransportHeaderLen)
			bt.Meta(i).Endpoint = ep
		}
		bt.UDPWriteArgs()
		msgs := bt.UDPReadArgs()
		for i := range MaxPackets {
			msgs[i].Addr, msgs[i].N = src, 1456
		}
		bt.UDPReadDone(MaxPackets)
		for i := range MaxPackets {
			bt.Pull(i, TransportHeaderLen)
			bt.SetSize(i, 1420)
		}
		bt.TUNWriteArgs()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*MaxPackets), "ns/packet")
}
