// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package handshake

import (
	"bytes"
	"encoding/binary"
	"errors"
	"net/netip"
	"testing"
	"time"

	"golang.org/x/crypto/blake2s"
	"golang.org/x/crypto/chacha20poly1305"

	"github.com/wirebatch/wirebatch/protocol"
)

// underLoadInitiation makes b under load and returns a's initiation with b's cookie reply to it.
func underLoadInitiation(t *testing.T, tp *testPair) (init, reply []byte) {
	t.Helper()
	tp.b.SetUnderLoad(true)
	init, err := tp.a.CreateInitiation(tp.bOnA)
	if err != nil {
		t.Fatal(err)
	}
	res, err := tp.b.HandleMessage(init, tp.addrA)
	if !errors.Is(err, ErrMAC2) {
		t.Fatalf("initiation without mac2 under load: %v, want ErrMAC2", err)
	}
	if res.Keypair != nil || len(res.Reply) != protocol.CookieReplySize {
		t.Fatalf("under load: keypair %v, reply of %d bytes; want none and a cookie reply", res.Keypair, len(res.Reply))
	}
	return init, res.Reply
}

func TestCookieReplyLayoutAndEncryption(t *testing.T) {
	tp := newTestPair(t, PresharedKey{})
	init, reply := underLoadInitiation(t, tp)
	if !bytes.Equal(reply[:4], []byte{3, 0, 0, 0}) || !bytes.Equal(reply[4:8], init[4:8]) {
		t.Fatalf("cookie reply header % x, want type 3 and receiver % x", reply[:8], init[4:8])
	}
	// Decrypt with x/crypto as an independent XChaCha20-Poly1305: key HASH("cookie--" || S_b),
	// AD the initiation's MAC1; the cookie must be MAC(Rm, source).
	key := blake2s.Sum256(append([]byte("cookie--"), tp.b.static.Load().public[:]...))
	aead, err := chacha20poly1305.NewX(key[:])
	if err != nil {
		t.Fatal(err)
	}
	cookie, err := aead.Open(nil, reply[8:32], reply[32:], init[116:132])
	if err != nil {
		t.Fatalf("cookie reply does not decrypt as XAEAD with the initiation's MAC1 as AD: %v", err)
	}
	if want := tp.b.static.Load().cookies.cookieFor(tp.addrA); !bytes.Equal(cookie, want[:]) {
		t.Fatalf("cookie %x, want MAC(Rm, source) %x", cookie, want)
	}
	if _, err := aead.Open(nil, reply[8:32], reply[32:], init[100:116]); err == nil {
		t.Fatal("cookie reply decrypts with another AD")
	}
}

func TestCookieRoundTripEnablesHandshakeUnderLoad(t *testing.T) {
	tp := newTestPair(t, PresharedKey{})
	_, reply := underLoadInitiation(t, tp)
	res, err := tp.a.HandleMessage(reply, tp.addrB)
	if err != nil || res.Peer != tp.bOnA || res.Type != protocol.TypeCookieReply {
		t.Fatalf("cookie reply: %+v, %v", res, err)
	}
	// The same reply is only good once: it answered our latest message.
	if _, err := tp.a.HandleMessage(reply, tp.addrB); !errors.Is(err, ErrDecrypt) {
		t.Fatalf("cookie reply consumed twice: %v, want ErrDecrypt", err)
	}
	// The retransmission carries MAC2 = MAC(cookie, msg[:132]) and gets through.
	tp.clock.Advance(protocol.RekeyTimeout)
	init, err := tp.a.CreateInitiation(tp.bOnA)
	if err != nil {
		t.Fatal(err)
	}
	cookie := tp.b.static.Load().cookies.cookieFor(tp.addrA)
	if want := macOf(cookie[:], init[:initMAC2]); !bytes.Equal(init[initMAC2:], want[:]) {
		t.Fatal("initiation's mac2 is not MAC(cookie, msg[:132])")
	}
	res, err = tp.b.HandleMessage(init, tp.addrA)
	if err != nil {
		t.Fatalf("initiation with mac2 under load: %v", err)
	}
	// a is not under load: it accepts the response (whose mac2 is zero, b holds no cookie).
	if _, err := tp.a.HandleMessage(res.Reply, tp.addrB); err != nil {
		t.Fatal(err)
	}
}

func TestMAC2IsBoundToSourceAndExpires(t *testing.T) {
	tp := newTestPair(t, PresharedKey{})
	_, reply := underLoadInitiation(t, tp)
	if _, err := tp.a.HandleMessage(reply, tp.addrB); err != nil {
		t.Fatal(err)
	}
	tp.clock.Advance(protocol.RekeyTimeout)
	init, err := tp.a.CreateInitiation(tp.bOnA)
	if err != nil {
		t.Fatal(err)
	}
	otherPort := netip.AddrPortFrom(tp.addrA.Addr(), tp.addrA.Port()+1)
	if _, err := tp.b.HandleMessage(init, otherPort); !errors.Is(err, ErrMAC2) {
		t.Fatalf("mac2 from another port: %v, want ErrMAC2", err)
	}
	// Rm changes every two minutes (paper section 5.4.7): a cookie made before is then refused.
	tp.clock.Advance(cookieLifetime - protocol.RekeyTimeout - time.Second)
	if _, err := tp.b.HandleMessage(init, tp.addrA); err != nil {
		t.Fatalf("mac2 within the cookie's lifetime: %v", err)
	}
	tp.clock.Advance(time.Second)
	if _, err := tp.b.HandleMessage(init, tp.addrA); !errors.Is(err, ErrMAC2) {
		t.Fatalf("mac2 after Rm changed: %v, want ErrMAC2", err)
	}
	// And the sender stops using a cookie older than two minutes: mac2 is zero again.
	init, err = tp.a.CreateInitiation(tp.bOnA)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(init[initMAC2:], make([]byte, macSize)) {
		t.Fatal("expired cookie still used for mac2")
	}
}

func TestMAC2NotCheckedWhenNotUnderLoad(t *testing.T) {
	tp := newTestPair(t, PresharedKey{})
	init, err := tp.a.CreateInitiation(tp.bOnA)
	if err != nil {
		t.Fatal(err)
	}
	copy(init[initMAC2:], bytes.Repeat([]byte{0xee}, macSize))
	if _, err := tp.b.HandleMessage(init, tp.addrA); err != nil {
		t.Fatalf("garbage mac2 while not under load: %v", err)
	}
}

func TestResponseUnderLoadGetsCookieReply(t *testing.T) {
	tp := newTestPair(t, PresharedKey{})
	init, err := tp.a.CreateInitiation(tp.bOnA)
	if err != nil {
		t.Fatal(err)
	}
	res, err := tp.b.HandleMessage(init, tp.addrA)
	if err != nil {
		t.Fatal(err)
	}
	tp.a.SetUnderLoad(true)
	res2, err := tp.a.HandleMessage(res.Reply, tp.addrB)
	if !errors.Is(err, ErrMAC2) || len(res2.Reply) != protocol.CookieReplySize {
		t.Fatalf("response under load: reply of %d bytes, %v; want a cookie reply and ErrMAC2", len(res2.Reply), err)
	}
	// The cookie reply names b's keypair index and decrypts with the MAC1 of b's response.
	if got := binary.LittleEndian.Uint32(res2.Reply[4:]); got != res.Keypair.LocalIndex {
		t.Fatalf("cookie reply receiver %#x, want %#x", got, res.Keypair.LocalIndex)
	}
	if _, err := tp.b.HandleMessage(res2.Reply, tp.addrA); err != nil {
		t.Fatalf("b consuming the cookie reply to its response: %v", err)
	}
	// b's next response carries MAC2 = MAC(cookie, msg[:76]) and gets through a under load.
	res, err = tp.b.HandleMessage(mustInitiation(t, tp), tp.addrA)
	if err != nil {
		t.Fatal(err)
	}
	cookie := tp.a.static.Load().cookies.cookieFor(tp.addrB)
	if want := macOf(cookie[:], res.Reply[:respMAC2]); !bytes.Equal(res.Reply[respMAC2:], want[:]) {
		t.Fatal("response's mac2 is not MAC(cookie, msg[:76])")
	}
	if _, err := tp.a.HandleMessage(res.Reply, tp.addrB); err != nil {
		t.Fatalf("response with mac2 under load: %v", err)
	}
}

func TestRateLimitUnderLoad(t *testing.T) {
	tp := newTestPair(t, PresharedKey{})
	_, reply := underLoadInitiation(t, tp)
	if _, err := tp.a.HandleMessage(reply, tp.addrB); err != nil {
		t.Fatal(err)
	}
	tp.clock.Advance(protocol.RekeyTimeout)
	init, err := tp.a.CreateInitiation(tp.bOnA)
	if err != nil {
		t.Fatal(err)
	}
	// The same valid initiation, resent: the limiter runs before the timestamp check, so the first
	// rateLimitBurst get past it (and the repeats then fail as replays), the next is limited.
	for i := range rateLimitBurst {
		if _, err := tp.b.HandleMessage(init, tp.addrA); errors.Is(err, ErrRateLimited) {
			t.Fatalf("message %d of the burst rate limited", i)
		}
	}
	if _, err := tp.b.HandleMessage(init, tp.addrA); !errors.Is(err, ErrRateLimited) {
		t.Fatalf("message past the burst: %v, want ErrRateLimited", err)
	}
}
