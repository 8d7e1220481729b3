// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package handshake

import (
	"crypto/cipher"
	"crypto/rand"
	"crypto/subtle"
	"fmt"
	"net/netip"
	"sync"
	"time"

	"github.com/wirebatch/wirebatch/kernels"
	"github.com/wirebatch/wirebatch/protocol"
)

// Cookies (WireGuard paper section 5.4.7). A responder under load answers a handshake message that
// lacks a valid MAC2 with a cookie reply instead of doing Diffie-Hellman: the cookie
// τ = MAC(Rm, source IP || port), where Rm is a secret that changes every two minutes, encrypted
// with XChaCha20-Poly1305 under HASH("cookie--" || responder's public key), with the MAC1 of the
// message being answered as additional data so only its real sender can use it. The sender then
// retries with mac2 = MAC(τ, message up to mac2), proving it receives packets at its address.

// cookieLifetime is both how long Rm lives and how long a received cookie may be used for MAC2
// (paper section 5.4.7: "changes every two minutes"; wireguard-go's CookieRefreshTime).
const cookieLifetime = 120 * time.Second

// mac1Key is HASH("mac1----" || public): the MAC1 of any message to the owner of public uses it.
func mac1Key(public *PublicKey) [32]byte { return hashOf([]byte(labelMAC1), public[:]) }

// cookieKey is HASH("cookie--" || public): the owner of public encrypts its cookie replies with it.
func cookieKey(public *PublicKey) [32]byte { return hashOf([]byte(labelCookie), public[:]) }

// newCookieAEAD returns the XChaCha20-Poly1305 of our kernels keyed with cookieKey(public). The key
// is derived from a public key, so it needs no wiping.
func newCookieAEAD(public *PublicKey) cipher.AEAD {
	k := cookieKey(public)
	aead, err := kernels.NewAEAD(kernels.XChaCha20Poly1305, k[:])
	if err != nil {
		panic(err) // a 32-byte key for a known suite cannot be rejected
	}
	return aead
}

// cookieChecker is the receiving side: it verifies MAC1 and MAC2 of messages addressed to our
// static key and makes cookie replies. Safe for concurrent use.
type cookieChecker struct {
	now       func() time.Time
	mac1Key   [32]byte
	replyAEAD cipher.AEAD // XAEAD under cookieKey(our public key)

	mu         sync.Mutex
	secret     [32]byte // Rm
	secretTime time.Time
}

func newCookieChecker(local *PublicKey, now func() time.Time) *cookieChecker {
	return &cookieChecker{now: now, mac1Key: mac1Key(local), replyAEAD: newCookieAEAD(local)}
}

// checkMAC1 verifies the MAC1 of a handshake message whose MAC1 starts at mac1Offset, in constant
// time. Everything before it is covered (paper section 5.4.4, msg_alpha).
func (c *cookieChecker) checkMAC1(msg []byte, mac1Offset int) bool {
	want := macOf(c.mac1Key[:], msg[:mac1Offset])
	return subtle.ConstantTimeCompare(want[:], msg[mac1Offset:mac1Offset+macSize]) == 1
}

// cookieFor computes τ = MAC(Rm, src), refreshing Rm when it is older than cookieLifetime.
func (c *cookieChecker) cookieFor(src netip.AddrPort) [cookieSize]byte {
	now := c.now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.secretTime.IsZero() || now.Sub(c.secretTime) >= cookieLifetime {
		rand.Read(c.secret[:]) // never fails (crypto/rand, Go 1.24+)
		c.secretTime = now
	}
	addr := sourceBytes(src)
	return macOf(c.secret[:], addr)
}

// sourceBytes encodes the source address as the IP (4 bytes for IPv4, 16 for IPv6) followed by the
// big-endian port. Only we ever compute cookies for our secret, so the encoding need not match any
// other implementation; it must only be injective.
func sourceBytes(src netip.AddrPort) []byte {
	ip := src.Addr().Unmap().AsSlice()
	return append(ip, byte(src.Port()>>8), byte(src.Port()))
}

// checkMAC2 verifies mac2 = MAC(τ, msg up to mac2) for the cookie src would currently be given
// (paper section 5.4.4, msg_beta), in constant time.
func (c *cookieChecker) checkMAC2(msg []byte, mac2Offset int, src netip.AddrPort) bool {
	cookie := c.cookieFor(src)
	want := macOf(cookie[:], msg[:mac2Offset])
	return subtle.ConstantTimeCompare(want[:], msg[mac2Offset:mac2Offset+macSize]) == 1
}

// createReply builds the 64-byte cookie reply to msg (an initiation or response, whose sender index
// sits at offset 4 in both) received from src: receiver = that sender index, a random 24-byte nonce,
// and XAEAD(cookie key, nonce, τ, AD = msg's MAC1).
func (c *cookieChecker) createReply(msg []byte, mac1Offset int, src netip.AddrPort) []byte {
	cookie := c.cookieFor(src)
	reply := make([]byte, protocol.CookieReplySize)
	reply[0] = byte(protocol.TypeCookieReply)
	copy(reply[cookieReceiver:cookieReceiver+4], msg[4:8])
	nonce := reply[cookieNonce:cookieBox]
	rand.Read(nonce) // never fails (crypto/rand, Go 1.24+)
	c.replyAEAD.Seal(reply[:cookieBox], nonce, cookie[:], msg[mac1Offset:mac1Offset+macSize])
	return reply
}

// cookieState is the sending side, one per peer: it adds MAC1 and MAC2 to our messages to that
// peer and accepts the peer's cookie replies. Guarded by the peer's mutex.
type cookieState struct {
	mac1Key    [32]byte    // mac1Key(peer's public key)
	replyAEAD  cipher.AEAD // XAEAD under cookieKey(peer's public key), to open its cookie replies
	cookie     [cookieSize]byte
	cookieTime time.Time // when cookie was received; zero: none

	// lastMAC1 is the MAC1 of our latest message to the peer: a cookie reply is only accepted as an
	// answer to it (its AD), and at most once.
	lastMAC1    [macSize]byte
	hasLastMAC1 bool
}

func (s *cookieState) init(peer *PublicKey) {
	s.mac1Key = mac1Key(peer)
	s.replyAEAD = newCookieAEAD(peer)
}

// addMACs fills in the MAC1 and MAC2 fields of an outgoing message (paper section 5.4.4). MAC2 stays
// zero unless a cookie younger than cookieLifetime is held.
func (s *cookieState) addMACs(msg []byte, mac1Offset int, now time.Time) {
	mac2Offset := mac1Offset + macSize
	s.lastMAC1 = macOf(s.mac1Key[:], msg[:mac1Offset])
	s.hasLastMAC1 = true
	copy(msg[mac1Offset:mac2Offset], s.lastMAC1[:])
	if s.cookieTime.IsZero() || now.Sub(s.cookieTime) >= cookieLifetime {
		clear(msg[mac2Offset : mac2Offset+macSize])
		return
	}
	mac2 := macOf(s.cookie[:], msg[:mac2Offset])
	copy(msg[mac2Offset:mac2Offset+macSize], mac2[:])
}

// consumeReply decrypts a cookie reply with the MAC1 of our latest message as AD and stores the
// cookie for later MAC2s.
func (s *cookieState) consumeReply(msg []byte, now time.Time) error {
	if !s.hasLastMAC1 {
		return fmt.Errorf("%w: cookie reply without a message of ours to answer", ErrDecrypt)
	}
	var cookie [cookieSize]byte
	_, err := s.replyAEAD.Open(cookie[:0], msg[cookieNonce:cookieBox], msg[cookieBox:], s.lastMAC1[:])
	if err != nil {
		return fmt.Errorf("%w: cookie reply", ErrDecrypt)
	}
	s.cookie = cookie
	s.cookieTime = now
	s.hasLastMAC1 = false
	return nil
}
