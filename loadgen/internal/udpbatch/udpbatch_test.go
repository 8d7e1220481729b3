package udpbatch

import (
	"bytes"
	"net"
	"testing"
	"time"

	"golang.org/x/net/ipv4"
)

func loopbackPair(t *testing.T, network, host string) (send, recv *Conn) {
	t.Helper()
	rc, err := net.ListenUDP(network, &net.UDPAddr{IP: net.ParseIP(host)})
	if err != nil {
		t.Skipf("no %s loopback: %v", network, err)
	}
	sc, err := net.DialUDP(network, nil, rc.LocalAddr().(*net.UDPAddr))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rc.Close(); sc.Close() })
	rc.SetReadDeadline(time.Now().Add(5 * time.Second))
	return New(sc), New(rc)
}

// readAll reads until want datagrams arrived, splitting coalesced messages.
func readAll(t *testing.T, c *Conn, want int) [][]byte {
	t.Helper()
	ms := make([]ipv4.Message, 8)
	for i := range ms {
		ms[i].Buffers = [][]byte{make([]byte, 65536)}
		ms[i].OOB = make([]byte, GROControlSize)
	}
	var got [][]byte
	for len(got) < want {
		n, err := c.ReadBatch(ms)
		if err != nil {
			t.Fatalf("after %d of %d datagrams: %v", len(got), want, err)
		}
		for _, m := range ms[:n] {
			data := m.Buffers[0][:m.N]
			size := SegmentSize(m.OOB[:m.NN])
			if size == 0 {
				size = len(data)
			}
			for len(data) > 0 {
				seg := data[:min(size, len(data))]
				got = append(got, bytes.Clone(seg))
				data = data[len(seg):]
			}
		}
	}
	return got
}

func TestBatchAndGSORoundTrip(t *testing.T) {
	for _, fam := range []struct{ network, host string }{{"udp4", "127.0.0.1"}, {"udp6", "::1"}} {
		for _, gro := range []bool{false, true} {
			send, recv := loopbackPair(t, fam.network, fam.host)
			if err := send.CheckGSO(); err != nil {
				t.Skipf("kernel without UDP GSO: %v", err)
			}
			if gro {
				if err := recv.EnableGRO(); err != nil {
					t.Skipf("kernel without UDP GRO: %v", err)
				}
			}
			// Three plain datagrams, then one GSO message of five 100-byte
			// datagrams and a 30-byte tail, in a single sendmmsg.
			var want [][]byte
			ms := make([]ipv4.Message, 4)
			for i := range 3 {
				p := bytes.Repeat([]byte{byte(i)}, 10+i)
				want = append(want, p)
				ms[i].Buffers = [][]byte{p}
			}
			var gso []byte
			for i := range 6 {
				n := 100
				if i == 5 {
					n = 30
				}
				p := bytes.Repeat([]byte{byte(10 + i)}, n)
				want = append(want, p)
				gso = append(gso, p...)
			}
			ms[3].Buffers = [][]byte{gso}
			ms[3].OOB = PutSegmentSize(make([]byte, SegmentControlSize), 100)
			if err := send.WriteBatch(ms); err != nil {
				t.Fatalf("%s gro=%v: WriteBatch: %v", fam.network, gro, err)
			}
			got := readAll(t, recv, len(want))
			if len(got) != len(want) {
				t.Fatalf("%s gro=%v: got %d datagrams, want %d", fam.network, gro, len(got), len(want))
			}
			for i := range want {
				if !bytes.Equal(got[i], want[i]) {
					t.Errorf("%s gro=%v: datagram %d = %d bytes of %d, want %d bytes of %d",
						fam.network, gro, i, len(got[i]), got[i][0], len(want[i]), want[i][0])
				}
			}
		}
	}
}

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
