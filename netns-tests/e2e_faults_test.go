// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package netnstests

import (
	"encoding/binary"
	"math/rand/v2"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wirebatch/wirebatch/netns-tests/harness"
)

// TestE2EFaults runs loadgen through the relay with 1% drop, 5% duplication, 25% reordering and 1%
// corruption (after WireGuard's 16-byte header, so a corrupted message reaches its keypair and fails
// authentication) in both directions, and accounts for every datagram the relay handled.
//
// In one direction the relay received R datagrams, dropped X, corrupted C of the rest and sent D of
// them twice. The receiving tunnel then sees R-X+D datagrams: R-X-C authentic originals, C
// corrupted ones and D second copies. A second copy of a corrupted datagram fails authentication
// again; any other second copy is a replay. So, with k corrupted datagrams duplicated (0 <= k <= C,
// k <= D): received = R-X-C, auth_failed = C+k, replay = D-k, hence auth_failed + replay = C+D.
// loadgen sees its own datagrams among the R: it must get no duplicate and no corrupted payload,
// and lose exactly the dropped and corrupted ones of its own, between X+C minus the datagrams that
// were not its own (TCP of its control connection) and X+C.
//
// The handshake happens through a clean relay first, so the impaired phase carries only transport
// messages, whose every fault lands in one of the counters above. The kernels of the three
// namespaces may drop too, when a reader falls behind on a loaded machine (kernelDrops): what they
// dropped widens each bound by as much, and nothing more does.
func TestE2EFaults(t *testing.T) {
	checkLeaks(t)
	impl := underTest(t)
	runFaults(t, impl, impl)
}

// runFaults is TestE2EFaults with implementations a and b at A and B; the counters are checked at
// the ends that report them.
func runFaults(t *testing.T, a, b impl) {
	tp := newTopo(t, topoConfig{A: a, B: b, Relay: []string{
		"-drop", "0.01", "-dup", "0.05", "-reorder", "0.25", "-reorder-delay", "2ms", "-corrupt", "0.01", "-corrupt-from", "16"}})
	tp.startRelay(false)
	tp.start()
	loadRecv(t, tp.B)
	reach(t, tp.A, tp.B, 10*time.Second)
	tp.stopRelay()
	beforeA, _ := tp.A.snapshot()
	beforeB, _ := tp.B.snapshot()
	kernelA, kernelM, kernelB := kernelDrops(t, tp.A.ns), kernelDrops(t, tp.M), kernelDrops(t, tp.B.ns)

	tp.startRelay(true)
	r := loadSend(t, tp.A, tp.B, "-rate", "3000", "-size", "64,1392", "-duration", "3s", "-drain", "500ms")
	// Datagrams the relay holds back when it stops are never sent: let the last ones (the control
	// connection's close) through first.
	time.Sleep(100 * time.Millisecond)
	rc := tp.stopRelay()
	t.Logf("relay: A->B %+v, B->A %+v", rc.LeftToRight, rc.RightToLeft)
	kernelA, kernelM, kernelB = kernelDrops(t, tp.A.ns)-kernelA, kernelDrops(t, tp.M)-kernelM, kernelDrops(t, tp.B.ns)-kernelB
	if kernelA+kernelM+kernelB > 0 {
		t.Logf("kernel drops over the impaired phase: A %d, relay %d, B %d", kernelA, kernelM, kernelB)
	}
	afterA, okA := tp.A.stop()
	afterB, okB := tp.B.stop()

	l2r := rc.LeftToRight
	// abandoned are datagrams a late TCP retransmission may still have had held back at the stop.
	abandoned := func(d dirCounts) uint64 { return d.Received - d.Dropped + d.Duplicated - d.Forwarded }
	for name, d := range map[string]dirCounts{"A->B": l2r, "B->A": rc.RightToLeft} {
		if d.Forwarded > d.Received-d.Dropped+d.Duplicated || abandoned(d) > 2 || d.RateLimited != 0 {
			t.Errorf("relay %s: %+v: forwarded is not received - dropped + duplicated", name, d)
		}
	}
	if l2r.Dropped == 0 || l2r.Duplicated == 0 || l2r.Reordered == 0 || l2r.Corrupted == 0 {
		t.Errorf("relay A->B %+v: every impairment should have happened at these rates", l2r)
	}
	if r.Duplicates != 0 || r.Corrupt != 0 || r.Stray != 0 || r.Received+r.Lost != r.Sent {
		t.Errorf("loadgen %+v: want no duplicate, corrupted or stray payload delivered", r)
	}
	if r.Reordered == 0 {
		t.Errorf("loadgen saw no reordering: the tunnel should deliver the relay's late datagrams, not drop them")
	}
	if l2r.Received+kernelA+kernelM < r.Sent {
		t.Fatalf("relay received %d datagrams from A, fewer than loadgen's %d less the kernels' drops", l2r.Received, r.Sent)
	}
	others := uint64(max(int64(l2r.Received)-int64(r.Sent), 0))
	faults := l2r.Dropped + l2r.Corrupted
	if r.Lost > faults+kernelA+kernelM+kernelB || r.Lost+others < faults {
		t.Errorf("loadgen lost %d; the relay dropped %d and corrupted %d of %d datagrams, %d of them not loadgen's",
			r.Lost, l2r.Dropped, l2r.Corrupted, l2r.Received, others)
	}
	for _, side := range []struct {
		e      *end
		ok     bool
		c      counters
		relay  dirCounts
		direct string
		kernel uint64
	}{{tp.B, okB, afterB.sub(beforeB), l2r, "A->B", kernelB}, {tp.A, okA, afterA.sub(beforeA), rc.RightToLeft, "B->A", kernelA}} {
		if !side.ok {
			continue
		}
		c, d, lost := side.c, side.relay, abandoned(side.relay)+side.kernel
		t.Logf("%v over the impaired phase: %+v", side.e, c)
		if want := d.Received - d.Dropped - d.Corrupted; c.ReceivedPackets > want || c.ReceivedPackets+lost < want {
			t.Errorf("%v received %d packets, want the relay's %s received - dropped - corrupted = %d",
				side.e, c.ReceivedPackets, side.direct, want)
		}
		k := int64(c.Dropped.AuthFailed) + int64(lost) - int64(d.Corrupted) // corrupted duplicates
		faulty := c.Dropped.AuthFailed + c.Dropped.Replay
		if faulty > d.Corrupted+d.Duplicated || faulty+lost < d.Corrupted+d.Duplicated || k < 0 || k > int64(min(d.Corrupted, d.Duplicated)+lost) {
			t.Errorf("%v: auth_failed %d, replay %d; the relay %s corrupted %d and duplicated %d",
				side.e, c.Dropped.AuthFailed, c.Dropped.Replay, side.direct, d.Corrupted, d.Duplicated)
		}
		if other := c.Dropped; other.NoKey+other.NoRoute+other.KeyExpired+other.BadSource+other.Malformed != 0 {
			t.Errorf("%v dropped packets for reasons the relay does not cause: %+v", side.e, other)
		}
	}
}

// TestE2EReplay captures the transport messages A sends B (AF_PACKET in B's namespace) and sends
// them to B again from A's address: right away, while their counters are inside B's replay window
// (RFC 6479, WireGuard 5.4.6), and later during a second loadgen run, when 12000 newer counters have
// pushed most of them out of it. B must drop every copy as a replay, deliver none (loadgen's second
// run sees no stray packet of the first) and not move its endpoint for A to the replayer's port
// (the second run's control connection runs through it).
func TestE2EReplay(t *testing.T) {
	tp := startLoadPair(t)

	capture := startCapture(t, tp.B, "wan")
	first := loadSend(t, tp.A, tp.B, "-rate", "2000", "-size", "200", "-duration", "1s")
	wantClean(t, first)
	captured := capture.stop()
	if uint64(len(captured)) < first.Sent {
		t.Fatalf("captured %d transport messages, fewer than loadgen's %d datagrams", len(captured), first.Sent)
	}
	var tx *net.UDPConn
	to := net.UDPAddrFromAddrPort(netip.AddrPortFrom(tp.B.outer, listenPort))
	if err := tp.A.ns.Do(func() (err error) {
		tx, err = net.DialUDP("udp4", net.UDPAddrFromAddrPort(netip.AddrPortFrom(tp.A.outer, 0)), to)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer tx.Close()
	// replay paces the copies (a few per millisecond) so that B's socket buffer is not what drops them.
	replay := func() error {
		for i, m := range captured {
			if _, err := tx.Write(m); err != nil {
				return err
			}
			if i%50 == 49 {
				time.Sleep(10 * time.Millisecond)
			}
		}
		return nil
	}

	before, ok := tp.B.snapshot()
	if err := replay(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	mid, _ := tp.B.snapshot()
	if ok {
		d := mid.sub(before)
		t.Logf("B after the first replay of %d messages: %+v", len(captured), d)
		// Only A's keepalives (32-byte messages) may have been received meanwhile.
		if d.Dropped.Replay != uint64(len(captured)) || d.ReceivedBytes != 32*d.ReceivedPackets || d.Dropped.AuthFailed != 0 {
			t.Errorf("B after %d replayed messages: replay %d, received %d (%d bytes), auth_failed %d; want every one a replay",
				len(captured), d.Dropped.Replay, d.ReceivedPackets, d.ReceivedBytes, d.Dropped.AuthFailed)
		}
	}

	done := make(chan error, 1)
	go func() {
		time.Sleep(2500 * time.Millisecond)
		done <- replay()
	}()
	second := loadSend(t, tp.A, tp.B, "-rate", "4000", "-size", "200", "-duration", "3s")
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	wantClean(t, second)
	end, _ := tp.B.stop()
	tp.A.stop()
	if ok {
		d := end.sub(mid)
		t.Logf("B over the second run: %+v", d)
		if d.Dropped.Replay != uint64(len(captured)) || d.Dropped.AuthFailed != 0 {
			t.Errorf("B during the second run: replay %d, auth_failed %d; want the %d replayed messages as replays",
				d.Dropped.Replay, d.Dropped.AuthFailed, len(captured))
		}
	}
}

// garbageClass is what a receiver must make of a datagram (WireGuard section 5.4): the message
// type is the first four bytes, little-endian; each handshake type has one exact length; a
// transport message is at least 32 bytes (16 of header, 16 of tag) and names its session by the
// receiver index.
type garbageClass int

const (
	malformed     garbageClass = iota // unknown type, or a length its type can not have
	handshakeSize                     // a handshake message's exact length, failing its MAC
	unknownIndex                      // a transport message for a session nobody has
)

func classify(b []byte) garbageClass {
	if len(b) < 4 {
		return malformed
	}
	switch binary.LittleEndian.Uint32(b) {
	case 1:
		if len(b) == 148 {
			return handshakeSize
		}
	case 2:
		if len(b) == 92 {
			return handshakeSize
		}
	case 3:
		if len(b) == 64 {
			return handshakeSize
		}
	case 4:
		if len(b) >= 32 {
			return unknownIndex
		}
	}
	return malformed
}

// TestE2EGarbage floods B's WireGuard port with 10000 datagrams from A's namespace: random lengths
// 0 to 200, nine in ten with a valid message type (1 to 4, reserved bytes zero) and random content,
// the rest entirely random. B must survive, deliver nothing, count each datagram as malformed or
// as for an unknown session (no_key) by its class, and carry traffic as before afterwards. Datagrams
// the kernel dropped at B's full socket buffer (RcvbufErrors) are allowed for.
func TestE2EGarbage(t *testing.T) {
	tp := startLoadPair(t)

	seed := testSeed(t)
	rng := rand.New(rand.NewPCG(seed, seed))
	var tx *net.UDPConn
	to := net.UDPAddrFromAddrPort(netip.AddrPortFrom(tp.B.outer, listenPort))
	if err := tp.A.ns.Do(func() (err error) { tx, err = net.DialUDP("udp4", nil, to); return err }); err != nil {
		t.Fatal(err)
	}
	defer tx.Close()
	before, ok := tp.B.snapshot()
	kernelBefore := snmp(t, tp.B.ns, "Udp", "RcvbufErrors")
	var classes [3]uint64
	buf := make([]byte, 200)
	for i := range 10000 {
		b := buf[:rng.IntN(201)]
		for j := range b {
			b[j] = byte(rng.Uint32())
		}
		if len(b) >= 4 && rng.IntN(10) != 0 {
			binary.LittleEndian.PutUint32(b, uint32(1+rng.IntN(4)))
		}
		classes[classify(b)]++
		if _, err := tx.Write(b); err != nil {
			t.Fatalf("sending garbage: %v", err)
		}
		if i%100 == 99 {
			time.Sleep(5 * time.Millisecond)
		}
	}
	time.Sleep(300 * time.Millisecond)
	kernelDrops := snmp(t, tp.B.ns, "Udp", "RcvbufErrors") - kernelBefore
	t.Logf("garbage: %d malformed, %d handshake-sized, %d transport for unknown sessions; %d dropped by B's kernel",
		classes[malformed], classes[handshakeSize], classes[unknownIndex], kernelDrops)
	if ok {
		after, _ := tp.B.snapshot()
		d := after.sub(before)
		t.Logf("B over the flood: %+v", d)
		// A's keepalives (32-byte messages) may arrive meanwhile; nothing else is authentic.
		if d.ReceivedBytes != 32*d.ReceivedPackets || d.Dropped.AuthFailed != 0 || d.Dropped.Replay != 0 {
			t.Errorf("B took garbage for authentic packets: %+v", d)
		}
		if d.Dropped.NoKey > classes[unknownIndex] || d.Dropped.NoKey+kernelDrops < classes[unknownIndex] {
			t.Errorf("B counted %d no_key; %d transport messages named unknown sessions", d.Dropped.NoKey, classes[unknownIndex])
		}
		// The counters have no field for handshake messages with a bad MAC: they may count as malformed.
		if d.Dropped.Malformed > classes[malformed]+classes[handshakeSize] || d.Dropped.Malformed+kernelDrops < classes[malformed] {
			t.Errorf("B counted %d malformed; %d datagrams were malformed and %d handshake-sized",
				d.Dropped.Malformed, classes[malformed], classes[handshakeSize])
		}
	}
	wantClean(t, loadSend(t, tp.A, tp.B, "-rate", "3000", "-size", "64,1392", "-duration", "1s"))
	tp.B.stop()
	tp.A.stop()
}

// TestE2EDuplicateAll runs everything through a relay that sends every datagram twice, from the
// first handshake message on. The second copy of the handshake initiation carries the same TAI64N
// timestamp and must be refused (WireGuard section 5.1: replayed initiations), so each end
// completes exactly one handshake; the second copy of every transport message is a replay. loadgen
// sees every datagram once.
func TestE2EDuplicateAll(t *testing.T) {
	checkLeaks(t)
	impl := underTest(t)
	tp := newTopo(t, topoConfig{A: impl, B: impl, Relay: []string{"-dup", "1"}})
	tp.startRelay(true)
	tp.start()
	loadRecv(t, tp.B)
	reach(t, tp.A, tp.B, 10*time.Second)
	wantClean(t, loadSend(t, tp.A, tp.B, "-rate", "2000", "-size", "64,1392", "-duration", "1s"))
	time.Sleep(100 * time.Millisecond) // the control connection's last segments
	rc := tp.stopRelay()
	t.Logf("relay: A->B %+v, B->A %+v", rc.LeftToRight, rc.RightToLeft)
	for _, side := range []struct {
		e     *end
		relay dirCounts
	}{{tp.A, rc.RightToLeft}, {tp.B, rc.LeftToRight}} {
		c, ok := side.e.stop()
		if !ok {
			continue
		}
		t.Logf("%v: %+v", side.e, c)
		// Every datagram the end received came twice; one of them was a handshake message (A
		// received the response, B the initiation; nothing is lost, so there is no retry), whose
		// copy is not a transport replay.
		d := side.relay.Duplicated
		if c.HandshakesCompleted != 1 || c.Dropped.Replay != d-1 || c.Dropped.AuthFailed != 0 {
			t.Errorf("%v: %d handshakes, replay %d, auth_failed %d; the relay duplicated %d datagrams to it; want 1 handshake and the copies as replays",
				side.e, c.HandshakesCompleted, c.Dropped.Replay, c.Dropped.AuthFailed, d)
		}
	}
}

// kernelDrops counts what the kernel of ns dropped for want of room, which no counter of ours, of
// loadgen's or of the relay's sees: UDP datagrams that found a socket's buffer full (RcvbufErrors of
// /proc/net/snmp, for the namespace it is read in) and packets of the tunnel's interface that its
// reader or the stack did not take in time (tx_dropped, rx_dropped). They stay zero on an idle
// machine; under CPU contention they are real losses between the counted points.
func kernelDrops(t *testing.T, ns *harness.Namespace) uint64 {
	t.Helper()
	snmp, err := nsOutput(ns, "cat", "/proc/net/snmp")
	if err != nil {
		t.Fatalf("%s: /proc/net/snmp: %v", ns.Name, err)
	}
	var drops uint64
	var header []string
	for _, line := range strings.Split(snmp, "\n") {
		fields := strings.Fields(line)
		if len(fields) == 0 || fields[0] != "Udp:" {
			continue
		}
		if header == nil {
			header = fields
			continue
		}
		for i, name := range header {
			if name == "RcvbufErrors" && i < len(fields) {
				n, err := strconv.ParseUint(fields[i], 10, 64)
				if err != nil {
					t.Fatalf("%s: /proc/net/snmp: Udp RcvbufErrors %q: %v", ns.Name, fields[i], err)
				}
				drops += n
			}
		}
		break
	}
	for _, stat := range []string{"tx_dropped", "rx_dropped"} {
		// No interface yet, or gone already: nothing dropped there.
		if out, err := nsOutput(ns, "cat", "/sys/class/net/"+tunIface+"/statistics/"+stat); err == nil {
			if n, err := strconv.ParseUint(strings.TrimSpace(out), 10, 64); err == nil {
				drops += n
			}
		}
	}
	return drops
}
