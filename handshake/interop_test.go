// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package handshake_test

// Interoperability with wireguard-go, in process: a golang.zx2c4.com/wireguard/device.Device runs on
// an in-memory TUN and an in-memory bind, and our Identity exchanges real handshake messages with it
// over the bind. The keys we derive are then proven by moving transport data messages (paper
// section 5.4.6) through wireguard-go each way: an IP packet we encrypt must come out of its TUN,
// and one written into its TUN must decrypt under our receive key.

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/chacha20poly1305"
	"golang.zx2c4.com/wireguard/conn"
	"golang.zx2c4.com/wireguard/conn/bindtest"
	"golang.zx2c4.com/wireguard/device"
	"golang.zx2c4.com/wireguard/tun/tuntest"

	"github.com/wirebatch/wirebatch/handshake"
	"github.com/wirebatch/wirebatch/protocol"
)

var (
	ourTunnelIP = netip.MustParseAddr("10.9.0.1") // inside the tunnel: our address
	wgTunnelIP  = netip.MustParseAddr("10.9.0.2") // inside the tunnel: wireguard-go's address

	// wgSource is the address we attribute to wireguard-go's datagrams; the channel bind has none.
	wgSource = netip.MustParseAddrPort("127.0.0.1:1")
)

// The channel binds connect two conn.Binds: wireguard-go gets binds[0], we drive binds[1] by hand.
// bindtest names bind 0 "port 1" (IPv4 channel) and "port 3" (IPv6 channel); bind 1 is 2 and 4.
const (
	wgEndpointForUs = "127.0.0.1:1"               // wireguard-go sends to us on the IPv4 channel
	usToWG          = bindtest.ChannelEndpoint(2) // we send to wireguard-go on the IPv4 channel
)

const recvTimeout = 5 * time.Second

type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

type interop struct {
	t     *testing.T
	clock *clock
	ours  *handshake.Identity
	peer  *handshake.PeerState // wireguard-go, as our peer
	tun   *tuntest.ChannelTUN
	bind  conn.Bind   // our end
	rx    chan []byte // datagrams wireguard-go sent us
}

func newInterop(t *testing.T, psk handshake.PresharedKey) *interop {
	t.Helper()
	ourKey, err := handshake.GeneratePrivateKey()
	if err != nil {
		t.Fatal(err)
	}
	wgKey, err := handshake.GeneratePrivateKey()
	if err != nil {
		t.Fatal(err)
	}
	// Our clock is fake but starts at the real time: wireguard-go only requires our TAI64N
	// timestamps to increase, and it reads its own clock.
	c := &clock{now: time.Now()}
	ours := handshake.NewIdentity(ourKey, handshake.Limits{Now: c.Now, NoJitter: true})
	peer, err := ours.AddPeer(wgKey.PublicKey(), psk)
	if err != nil {
		t.Fatal(err)
	}
	peer.SetEndpoint(wgSource)

	binds := bindtest.NewChannelBinds()
	it := &interop{t: t, clock: c, ours: ours, peer: peer, tun: tuntest.NewChannelTUN(), bind: binds[1], rx: make(chan []byte, 64)}
	wg := device.NewDevice(it.tun.TUN(), binds[0], device.NewLogger(device.LogLevelError, "wireguard-go: "))
	t.Cleanup(wg.Close)
	ourPublic := ourKey.PublicKey()
	config := fmt.Sprintf("private_key=%s\npublic_key=%s\npreshared_key=%s\nendpoint=%s\nallowed_ip=%s/32\n",
		hex.EncodeToString(wgKey[:]), hex.EncodeToString(ourPublic[:]), hex.EncodeToString(psk[:]), wgEndpointForUs, ourTunnelIP)
	if err := wg.IpcSet(config); err != nil {
		t.Fatalf("IpcSet: %v", err)
	}
	if err := wg.Up(); err != nil {
		t.Fatal(err)
	}

	receivers, _, err := it.bind.Open(0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { it.bind.Close() })
	for _, receive := range receivers {
		go func() {
			bufs, sizes, eps := [][]byte{make([]byte, 2048)}, make([]int, 1), make([]conn.Endpoint, 1)
			for {
				n, err := receive(bufs, sizes, eps)
				if err != nil {
					return // the bind was closed
				}
				for i := range n {
					it.rx <- bytes.Clone(bufs[i][:sizes[i]])
				}
			}
		}()
	}
	return it
}

func (it *interop) send(msg []byte) {
	it.t.Helper()
	if err := it.bind.Send([][]byte{msg}, usToWG); err != nil {
		it.t.Fatalf("send to wireguard-go: %v", err)
	}
}

// receive returns the next datagram from wireguard-go of type typ. Transport keepalives and other
// types are logged and skipped: wireguard-go's timers run on the real clock.
func (it *interop) receive(typ protocol.MessageType) []byte {
	it.t.Helper()
	return it.receiveWithin(typ, recvTimeout)
}

func (it *interop) receiveWithin(typ protocol.MessageType, timeout time.Duration) []byte {
	it.t.Helper()
	deadline := time.After(timeout)
	for {
		select {
		case msg := <-it.rx:
			if len(msg) >= 4 && protocol.MessageType(binary.LittleEndian.Uint32(msg)) == typ {
				return msg
			}
			it.t.Logf("skipping a %d-byte datagram while waiting for type %d", len(msg), typ)
		case <-deadline:
			it.t.Fatalf("no type %d message from wireguard-go within %v", typ, timeout)
		}
	}
}

// toWireGuardTUN sends packet to wireguard-go under kp and checks that it comes out of its TUN.
func (it *interop) toWireGuardTUN(kp *handshake.Keypair, counter uint64, packet []byte) {
	it.t.Helper()
	it.send(sealTransport(kp, counter, packet))
	select {
	case got := <-it.tun.Inbound:
		if !bytes.Equal(got, packet) {
			it.t.Fatalf("wireguard-go's TUN got % x, want % x", got, packet)
		}
	case <-time.After(recvTimeout):
		it.t.Fatal("our transport message did not come out of wireguard-go's TUN")
	}
}

// fromWireGuardTUN writes packet into wireguard-go's TUN and checks that the transport message it
// sends us decrypts under kp to that packet.
func (it *interop) fromWireGuardTUN(kp *handshake.Keypair, packet []byte) {
	it.t.Helper()
	it.tun.Outbound <- packet
	it.expectTransport(kp, packet)
}

func (it *interop) expectTransport(kp *handshake.Keypair, packet []byte) {
	it.t.Helper()
	msg := it.receive(protocol.TypeTransport)
	plaintext, err := openTransport(kp, msg)
	if err != nil {
		it.t.Fatalf("wireguard-go's transport message: %v", err)
	}
	// The plaintext is the packet zero-padded to a multiple of 16 bytes (paper section 5.4.6).
	if len(plaintext)%16 != 0 || !bytes.Equal(plaintext[:len(packet)], packet) || !isZero(plaintext[len(packet):]) {
		it.t.Fatalf("decrypted % x, want % x padded to 16", plaintext, packet)
	}
}

// initiate runs a handshake that we initiate and returns our keypair.
func (it *interop) initiate() *handshake.Keypair {
	it.t.Helper()
	init, err := it.ours.CreateInitiation(it.peer)
	if err != nil {
		it.t.Fatal(err)
	}
	it.send(init)
	res, err := it.ours.HandleMessage(it.receive(protocol.TypeResponse), wgSource)
	if err != nil {
		it.t.Fatalf("wireguard-go's response: %v", err)
	}
	if res.Peer != it.peer || res.Keypair == nil || !res.Keypair.Initiator {
		it.t.Fatalf("response result %+v", res)
	}
	return res.Keypair
}

func TestInteropWeInitiate(t *testing.T) {
	it := newInterop(t, handshake.PresharedKey{})
	kp := it.initiate()
	it.toWireGuardTUN(kp, 0, udpPacket(ourTunnelIP, wgTunnelIP, "hello from wirebatch"))
	it.fromWireGuardTUN(kp, udpPacket(wgTunnelIP, ourTunnelIP, "hello from wireguard-go, 1 2 3 4 5"))
	it.toWireGuardTUN(kp, 1, udpPacket(ourTunnelIP, wgTunnelIP, "second"))
}

func TestInteropWireGuardInitiates(t *testing.T) {
	it := newInterop(t, handshake.PresharedKey{7, 7, 7})
	// A packet for us in wireguard-go's TUN makes it initiate; the packet waits for the session.
	first := udpPacket(wgTunnelIP, ourTunnelIP, "staged until the handshake completes")
	it.tun.Outbound <- first
	res, err := it.ours.HandleMessage(it.receive(protocol.TypeInitiation), wgSource)
	if err != nil {
		t.Fatalf("wireguard-go's initiation: %v", err)
	}
	kp := res.Keypair
	if res.Peer != it.peer || kp == nil || kp.Initiator || len(res.Reply) != protocol.ResponseSize {
		t.Fatalf("initiation result %+v", res)
	}
	it.send(res.Reply)
	// The initiator sends first; its first message confirms our responder keypair.
	it.expectTransport(kp, first)
	it.peer.KeypairConfirmed()
	it.toWireGuardTUN(kp, 0, udpPacket(ourTunnelIP, wgTunnelIP, "reply"))
	it.fromWireGuardTUN(kp, udpPacket(wgTunnelIP, ourTunnelIP, "and more"))
}

func TestInteropRekey(t *testing.T) {
	it := newInterop(t, handshake.PresharedKey{})
	old := it.initiate()
	it.toWireGuardTUN(old, 0, udpPacket(ourTunnelIP, wgTunnelIP, "under the first keypair"))
	it.fromWireGuardTUN(old, udpPacket(wgTunnelIP, ourTunnelIP, "back under the first keypair"))

	it.clock.Advance(protocol.RekeyAfterTime)
	if !it.peer.RekeyDueOnSend(old, 1) {
		t.Fatal("no rekey due for the initiator's keypair after REKEY_AFTER_TIME")
	}
	// wireguard-go ignores initiations from a peer less than 20 ms (its clock) after the last.
	time.Sleep(25 * time.Millisecond)
	kp := it.initiate()
	if kp.Send == old.Send || kp.LocalIndex == old.LocalIndex {
		t.Fatal("the second handshake did not produce a new keypair")
	}
	it.toWireGuardTUN(kp, 0, udpPacket(ourTunnelIP, wgTunnelIP, "under the second keypair"))
	it.fromWireGuardTUN(kp, udpPacket(wgTunnelIP, ourTunnelIP, "back under the second keypair"))
	it.ours.Indices().Release(old.LocalIndex)
	old.Wipe()
}

// TestInteropCookieReply has us under load answer wireguard-go's initiation with a cookie reply
// (XChaCha20-Poly1305 from our kernels): wireguard-go must decrypt it and put the cookie in the
// MAC2 of its retransmission, which it sends after its REKEY_TIMEOUT of 5 s on the real clock.
func TestInteropCookieReply(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for wireguard-go's 5 s retransmission")
	}
	t.Parallel()
	it := newInterop(t, handshake.PresharedKey{})
	it.ours.SetUnderLoad(true)
	staged := udpPacket(wgTunnelIP, ourTunnelIP, "waits for a cookie round trip")
	it.tun.Outbound <- staged
	first := it.receive(protocol.TypeInitiation)
	res, err := it.ours.HandleMessage(first, wgSource)
	if !errors.Is(err, handshake.ErrMAC2) || len(res.Reply) != protocol.CookieReplySize {
		t.Fatalf("initiation without mac2 under load: %d-byte reply, %v", len(res.Reply), err)
	}
	it.send(res.Reply)

	retry := it.receiveWithin(protocol.TypeInitiation, protocol.RekeyTimeout+handshake.DefaultRekeyTimeoutJitter+recvTimeout)
	if isZero(retry[protocol.InitiationSize-16:]) {
		t.Fatal("wireguard-go's retransmission has no mac2: it did not accept our cookie reply")
	}
	res, err = it.ours.HandleMessage(retry, wgSource)
	if err != nil {
		t.Fatalf("retransmission with mac2 under load: %v", err)
	}
	it.send(res.Reply)
	it.expectTransport(res.Keypair, staged)
}

// sealTransport builds a transport data message (paper section 5.4.6): type 4, three zero bytes,
// the receiver index, the little-endian counter, then ChaCha20-Poly1305 under the send key with
// nonce 0^32 || LE64(counter) and empty AD over the packet zero-padded to a multiple of 16.
func sealTransport(kp *handshake.Keypair, counter uint64, packet []byte) []byte {
	aead, err := chacha20poly1305.New(kp.Send[:])
	if err != nil {
		panic(err)
	}
	padded := make([]byte, (len(packet)+15)/16*16)
	copy(padded, packet)
	msg := make([]byte, 16, 16+len(padded)+chacha20poly1305.Overhead)
	binary.LittleEndian.PutUint32(msg, uint32(protocol.TypeTransport))
	binary.LittleEndian.PutUint32(msg[4:], kp.RemoteIndex)
	binary.LittleEndian.PutUint64(msg[8:], counter)
	var nonce [chacha20poly1305.NonceSize]byte
	binary.LittleEndian.PutUint64(nonce[4:], counter)
	return aead.Seal(msg, nonce[:], padded, nil)
}

// openTransport checks a transport data message's header against kp and decrypts it.
func openTransport(kp *handshake.Keypair, msg []byte) ([]byte, error) {
	if len(msg) < 16+chacha20poly1305.Overhead {
		return nil, fmt.Errorf("%d-byte transport message", len(msg))
	}
	if receiver := binary.LittleEndian.Uint32(msg[4:]); receiver != kp.LocalIndex {
		return nil, fmt.Errorf("receiver index %#x, our keypair's is %#x", receiver, kp.LocalIndex)
	}
	aead, err := chacha20poly1305.New(kp.Receive[:])
	if err != nil {
		return nil, err
	}
	var nonce [chacha20poly1305.NonceSize]byte
	copy(nonce[4:], msg[8:16])
	plaintext, err := aead.Open(nil, nonce[:], msg[16:], nil)
	if err != nil {
		return nil, errors.New("does not decrypt under our receive key")
	}
	return plaintext, nil
}

// udpPacket builds an IPv4/UDP packet (RFC 791, RFC 768) with a correct header checksum; the UDP
// checksum is left zero, which IPv4 allows.
func udpPacket(src, dst netip.Addr, payload string) []byte {
	pkt := make([]byte, 28+len(payload))
	pkt[0] = 0x45 // version 4, 5-word header
	binary.BigEndian.PutUint16(pkt[2:], uint16(len(pkt)))
	pkt[8] = 64 // TTL
	pkt[9] = 17 // UDP
	s, d := src.As4(), dst.As4()
	copy(pkt[12:16], s[:])
	copy(pkt[16:20], d[:])
	var sum uint32
	for i := 0; i < 20; i += 2 {
		sum += uint32(binary.BigEndian.Uint16(pkt[i:]))
	}
	for sum > 0xffff {
		sum = sum&0xffff + sum>>16
	}
	binary.BigEndian.PutUint16(pkt[10:], ^uint16(sum))
	binary.BigEndian.PutUint16(pkt[20:], 40000)
	binary.BigEndian.PutUint16(pkt[22:], 7)
	binary.BigEndian.PutUint16(pkt[24:], uint16(8+len(payload)))
	copy(pkt[28:], payload)
	return pkt
}

func isZero(b []byte) bool {
	for _, x := range b {
		if x != 0 {
			return false
		}
	}
	return true
}
