// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

// Package handshake is the control plane of a WireGuard-compatible VPN: the Noise_IKpsk2 handshake
// (WireGuard paper section 5.4), MAC1/MAC2 and cookie replies (section 5.4.4 and 5.4.7), handshake
// rate limiting, and the timers of section 6. It interoperates with wireguard-go and the Linux
// kernel module: same message layouts, same key schedule, same timer rules.
//
// It never touches the packets of the data path. It turns handshake messages (types 1 to 3) into
// replies and Keypairs, and data-path events into timer Actions; the data plane (package dataplane)
// sends what it is given, encrypts and decrypts transport messages (type 4) under the Keypairs, and
// tells the PeerState what happened.
//
// # Setup
//
//	id := handshake.NewIdentity(privateKey, handshake.Limits{}) // zero Limits: the paper's defaults
//	p, err := id.AddPeer(peerPublicKey, presharedKey)          // zero PresharedKey: none
//	p.SetEndpoint(endpoint)
//	p.SetPersistentKeepalive(25 * time.Second)                 // optional
//
// The zero private key means none yet (no handshake is made or answered). SetPrivateKey changes it
// at run time; the sessions made under the old key must then be expired, which ControlPlane's
// SetPrivateKey does.
//
// # Driving it from the data plane
//
// A datagram of type 1, 2 or 3 from src:
//
//	res, err := id.HandleMessage(msg, src)
//	if res.Reply != nil { send res.Reply to src }            // a response, or a cookie reply (err is ErrMAC2)
//	if err != nil { count and drop }
//	if res.Keypair != nil { install it for res.Peer; res.Keypair.Wipe() }
//
// A keypair with Initiator true may be used at once. One with Initiator false (we answered an
// initiation) is only for receiving until the first transport message arrives under it; then
// call res.Peer.KeypairConfirmed() and start sending with it.
//
// A transport message (type 4) whose receiver index names a keypair of peer p (id.Indices() maps
// every local index to its peer), after it authenticated and passed the replay window:
//
//	if id.KeypairExpired(kp, counter) { drop }              // REJECT_AFTER_TIME / _MESSAGES
//	p.PacketReceived(src, len(plaintext) > 0)                 // timers and roaming
//	if p.RekeyDueOnReceive(kp) { initiate }
//
// Sending to p: with no keypair, or id.KeypairExpired(kp, counter), queue the packet and
// initiate. After sending a transport message, p.PacketSent(len(plaintext) > 0), and if
// p.RekeyDueOnSend(kp, counter) initiate. To initiate:
//
//	msg, err := id.CreateInitiation(p) // ErrInitiationTooSoon: one is already in flight; nothing to do
//	send msg to p.Endpoint()
//
// Timers: sleep until id.NextDeadline() (events only arm deadlines in the future; re-read it after
// configuration changes), then for each of id.Peers() act on p.Tick():
//
//	ActionSendInitiation: initiate, as above
//	ActionSendKeepalive:  send an empty transport message, or initiate if no keypair is usable
//	ActionGiveUp:         drop the packets queued for p
//	ActionZeroKeys:       destroy p's keypairs
//
// When the data plane retires a keypair, it releases its index: id.Indices().Release(kp.LocalIndex).
//
// # With package dataplane
//
// ControlPlane does all of the above for a dataplane.Device, with a goroutine for the timers:
//
//	cp := handshake.NewControlPlane(id, log.Printf)
//	d, err := dataplane.NewDevice(tun, udp, dataplane.Config{Handshaker: cp})
//	cp.AddPeer(handshake.PeerSettings{PublicKey: pub, Endpoint: ep, AllowedIPs: ips})
//	...
//	d.Close(); cp.Close()
//
// Time comes from Limits.Now, so tests drive everything, timers included, with a fake clock.
package handshake
