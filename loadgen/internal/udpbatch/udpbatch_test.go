package udpbatch

import (
	"bytes"
	"net"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wirebatch/wirebatch/internal/udpoffload"
)

func loopbackPair(t *testing.T, host string) (send, recv *Conn) {
	t.Helper()
	rc, err := Listen(&net.UDPAddr{IP: net.ParseIP(host)})
	if err != nil {
		t.Skipf("no loopback %s: %v", host, err)
	}
	t.Cleanup(func() { rc.Close() })
	to, err := rc.LocalAddr()
	if err != nil {
		t.Fatal(err)
	}
	sc, err := Dial(to)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sc.Close() })
	if err := rc.SetReadTimeout(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	return sc, rc
}

// readAll reads until want datagrams arrived, splitting coalesced messages.
func readAll(t *testing.T, c *Conn, want int) [][]byte {
	t.Helper()
	ms := make([]Message, 8)
	for i := range ms {
		ms[i].Buf = make([]byte, 65536)
		ms[i].OOB = make([]byte, udpoffload.GROControlSize)
	}
	var got [][]byte
	for len(got) < want {
		n, err := c.ReadBatch(ms)
		if err != nil {
			t.Fatalf("after %d of %d datagrams: %v", len(got), want, err)
		}
		for _, m := range ms[:n] {
			data := m.Buf[:m.N]
			size := udpoffload.SegmentSize(m.OOB[:m.NN])
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
	for _, host := range []string{"127.0.0.1", "::1"} {
		for _, gro := range []bool{false, true} {
			send, recv := loopbackPair(t, host)
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
			ms := make([]Message, 4)
			for i := range 3 {
				p := bytes.Repeat([]byte{byte(i)}, 10+i)
				want = append(want, p)
				ms[i].Buf = p
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
			ms[3].Buf = gso
			ms[3].OOB = udpoffload.PutSegmentSize(make([]byte, udpoffload.SegmentControlSize), 100)
			if err := send.WriteBatch(ms); err != nil {
				t.Fatalf("%s gro=%v: WriteBatch: %v", host, gro, err)
			}
			got := readAll(t, recv, len(want))
			if len(got) != len(want) {
				t.Fatalf("%s gro=%v: got %d datagrams, want %d", host, gro, len(got), len(want))
			}
			for i := range want {
				if !bytes.Equal(got[i], want[i]) {
					t.Errorf("%s gro=%v: datagram %d = %d bytes of %d, want %d bytes of %d",
						host, gro, i, len(got[i]), got[i][0], len(want[i]), want[i][0])
				}
			}
		}
	}
}

func TestReadTimeout(t *testing.T) {
	_, recv := loopbackPair(t, "127.0.0.1")
	if err := recv.SetReadTimeout(20 * time.Millisecond); err != nil {
		t.Fatal(err)
	}
	ms := []Message{{Buf: make([]byte, 100)}}
	if n, err := recv.ReadBatch(ms); n != 0 || err != ErrTimeout {
		t.Errorf("ReadBatch on a silent socket = %d, %v; want ErrTimeout", n, err)
	}
}

func TestWriteBatchReportsUnreachablePort(t *testing.T) {
	// A port nobody listens on: after the kernel's ICMP port unreachable,
	// the connected socket's next send fails.
	send, recv := loopbackPair(t, "127.0.0.1")
	recv.Close()
	ms := []Message{{Buf: []byte("x")}}
	var err error
	for range 10 {
		if err = send.WriteBatch(ms); err != nil {
			break
		}
		time.Sleep(time.Millisecond)
	}
	if err != unix.ECONNREFUSED {
		t.Errorf("WriteBatch to a closed port: %v, want ECONNREFUSED", err)
	}
}

func TestZeroAllocations(t *testing.T) {
	send, recv := loopbackPair(t, "127.0.0.1")
	out := make([]Message, 16)
	in := make([]Message, 16)
	for i := range out {
		out[i].Buf = make([]byte, 64)
		in[i].Buf = make([]byte, 64)
	}
	allocs := testing.AllocsPerRun(100, func() {
		if err := send.WriteBatch(out); err != nil {
			t.Fatal(err)
		}
		for got := 0; got < len(out); {
			n, err := recv.ReadBatch(in)
			if err != nil {
				t.Fatal(err)
			}
			got += n
		}
	})
	if allocs != 0 {
		t.Errorf("a batch round trip allocates %v times", allocs)
	}
}
