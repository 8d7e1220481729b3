// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package device

// The cross-platform configuration protocol (https://www.wireguard.com/xplatform/): "get" lists the
// configuration and the peers' state as key=value lines, "set" applies key=value lines in order.
// Keys, value formats, errors and their errno values are wireguard-go's, so that wg(8) and the
// embedders of wireguard-go see the same behaviour; a set stops at its first error, keeping what the
// lines before it did.

import (
	"bufio"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"golang.zx2c4.com/wireguard/ipc"

	"github.com/wirebatch/wirebatch/handshake"
)

// IpcGet returns the configuration and state as IpcGetOperation writes it.
func (d *Device) IpcGet() (string, error) {
	var b strings.Builder
	if err := d.IpcGetOperation(&b); err != nil {
		return "", err
	}
	return b.String(), nil
}

// IpcSet applies a configuration as IpcSetOperation reads it.
func (d *Device) IpcSet(uapiConf string) error {
	return d.IpcSetOperation(strings.NewReader(uapiConf))
}

// IpcGetOperation writes the "get" reply without its errno line: private_key (if set), listen_port
// (if not zero: the bound port while up), fwmark (if set), then for each peer public_key,
// preshared_key, protocol_version, endpoint (if known), last_handshake_time_sec and _nsec, tx_bytes
// and rx_bytes (transport messages, whole), persistent_keepalive_interval and one allowed_ip line
// per allowed IP. Keys are in lowercase hex.
func (d *Device) IpcGetOperation(w io.Writer) error {
	var b strings.Builder
	line := func(key string, value any) { fmt.Fprintf(&b, "%s=%v\n", key, value) }
	key := func(name string, k *[32]byte) { line(name, hex.EncodeToString(k[:])) }

	d.ipcMu.RLock()
	if !d.private.IsZero() {
		key("private_key", (*[32]byte)(&d.private))
	}
	port, mark := d.net.config()
	if port != 0 {
		line("listen_port", port)
	}
	if mark != 0 {
		line("fwmark", mark)
	}
	for _, p := range d.order {
		key("public_key", (*[32]byte)(&p.public))
		key("preshared_key", (*[32]byte)(&p.psk))
		line("protocol_version", 1)
		if ep := p.dp.Endpoint(); ep.IsValid() {
			line("endpoint", ep)
		}
		var last int64
		if hp := d.id.Peer(p.public); hp != nil {
			if t := hp.LastHandshake(); !t.IsZero() {
				last = t.UnixNano()
			}
		}
		line("last_handshake_time_sec", last/int64(time.Second))
		line("last_handshake_time_nsec", last%int64(time.Second))
		st := p.dp.Stats()
		line("tx_bytes", st.TxBytes)
		line("rx_bytes", st.RxBytes)
		line("persistent_keepalive_interval", p.keepalive)
		for _, pr := range p.allowed {
			line("allowed_ip", pr)
		}
	}
	d.ipcMu.RUnlock()

	if _, err := io.WriteString(w, b.String()); err != nil {
		return ipcErrorf(ipc.IpcErrorIO, "failed to write output: %w", err)
	}
	return nil
}

// IpcSetOperation reads "set" lines from r up to an empty line or the end, applying each in turn:
// device keys (private_key, listen_port, fwmark, replace_peers) until the first public_key, then
// peer keys (update_only, remove, preshared_key, endpoint, persistent_keepalive_interval,
// replace_allowed_ips, allowed_ip with "-" to remove one, protocol_version) for the peer named by
// the last public_key, created unless update_only follows. Everything takes effect at once on the
// running Device: the listen port rebinds the sockets, the private key expires every session.
func (d *Device) IpcSetOperation(r io.Reader) (err error) {
	d.ipcMu.Lock()
	defer d.ipcMu.Unlock()
	defer func() {
		if err != nil {
			d.log.Errorf("%v", err)
		}
	}()
	if d.peers == nil {
		return ipcErrorf(ipc.IpcErrorInvalid, "device closed")
	}
	var cur setPeer
	devicePart := true
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		text := sc.Text()
		if text == "" {
			return nil // an empty line ends the operation
		}
		k, v, ok := strings.Cut(text, "=")
		if !ok {
			// Not quoted back: a malformed line may hold a key.
			return ipcErrorf(ipc.IpcErrorProtocol, "failed to parse a line of %d bytes: no '='", len(text))
		}
		switch {
		case k == "public_key":
			devicePart = false
			err = d.selectPeer(&cur, v)
		case devicePart:
			err = d.setDevice(k, v)
		default:
			err = d.setPeer(&cur, k, v)
		}
		if err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return ipcErrorf(ipc.IpcErrorIO, "failed to read input: %w", err)
	}
	return nil
}

// setPeer is the peer a set operation is configuring: p is nil for a placeholder whose lines are
// checked and ignored (our own public key, a peer removed, or not created because of update_only).
type setPeer struct {
	p       *peer
	created bool
}

func (d *Device) setDevice(k, v string) error {
	switch k {
	case "private_key":
		var sk handshake.PrivateKey
		if err := parseHexKey((*[32]byte)(&sk), v); err != nil {
			return ipcErrorf(ipc.IpcErrorInvalid, "failed to set private_key: %w", err)
		}
		d.log.Verbosef("UAPI: Updating private key")
		d.setPrivateKey(sk.Clamped())
	case "listen_port":
		port, err := strconv.ParseUint(v, 10, 16)
		if err != nil {
			return ipcErrorf(ipc.IpcErrorInvalid, "failed to parse listen_port: %w", err)
		}
		d.log.Verbosef("UAPI: Updating listen port")
		if err := d.net.setPort(uint16(port)); err != nil {
			return ipcErrorf(ipc.IpcErrorPortInUse, "failed to set listen_port: %w", err)
		}
	case "fwmark":
		mark, err := strconv.ParseUint(v, 10, 32)
		if err != nil {
			return ipcErrorf(ipc.IpcErrorInvalid, "invalid fwmark: %w", err)
		}
		d.log.Verbosef("UAPI: Updating fwmark")
		if err := d.net.setMark(uint32(mark)); err != nil {
			return ipcErrorf(ipc.IpcErrorPortInUse, "failed to update fwmark: %w", err)
		}
	case "replace_peers":
		if v != "true" {
			return ipcErrorf(ipc.IpcErrorInvalid, "failed to set replace_peers, invalid value: %v", v)
		}
		d.log.Verbosef("UAPI: Removing all peers")
		for len(d.order) > 0 {
			d.removePeer(d.order[0])
		}
	default:
		return ipcErrorf(ipc.IpcErrorInvalid, "invalid UAPI device key: %v", k)
	}
	return nil
}

// selectPeer makes the peer with public key v (hex) the one the following lines configure,
// creating it if needed.
func (d *Device) selectPeer(cur *setPeer, v string) error {
	*cur = setPeer{}
	var pub handshake.PublicKey
	if err := parseHexKey((*[32]byte)(&pub), v); err != nil {
		return ipcErrorf(ipc.IpcErrorInvalid, "failed to get peer by public key: %w", err)
	}
	if pub == d.id.PublicKey() {
		return nil // our own key (zero while we have none): its lines are ignored
	}
	if cur.p = d.peers[pub]; cur.p != nil {
		return nil
	}
	p, err := d.addPeer(pub)
	if err != nil {
		return ipcErrorf(ipc.IpcErrorInvalid, "failed to create new peer: %w", err)
	}
	d.log.Verbosef("%v - UAPI: Created", pub)
	cur.p, cur.created = p, true
	return nil
}

func (d *Device) setPeer(cur *setPeer, k, v string) error {
	p := cur.p
	switch k {
	case "update_only":
		if v != "true" {
			return ipcErrorf(ipc.IpcErrorInvalid, "failed to set update only, invalid value: %v", v)
		}
		if cur.created {
			d.removePeer(p)
			*cur = setPeer{}
		}
	case "remove":
		if v != "true" {
			return ipcErrorf(ipc.IpcErrorInvalid, "failed to set remove, invalid value: %v", v)
		}
		if p != nil {
			d.log.Verbosef("%v - UAPI: Removing", p.public)
			d.removePeer(p)
		}
		*cur = setPeer{}
	case "preshared_key":
		var psk handshake.PresharedKey
		if err := parseHexKey((*[32]byte)(&psk), v); err != nil {
			return ipcErrorf(ipc.IpcErrorInvalid, "failed to set preshared key: %w", err)
		}
		if p != nil {
			d.log.Verbosef("%v - UAPI: Updating preshared key", p.public)
			p.psk = psk
			if hp := d.id.Peer(p.public); hp != nil {
				hp.SetPresharedKey(psk)
			}
		}
	case "endpoint":
		ep, err := d.net.parseEndpoint(v)
		if err != nil {
			return ipcErrorf(ipc.IpcErrorInvalid, "failed to set endpoint %v: %w", v, err)
		}
		if p != nil {
			d.log.Verbosef("%v - UAPI: Updating endpoint", p.public)
			d.cp.SetEndpoint(p.public, ep)
		}
	case "persistent_keepalive_interval":
		secs, err := strconv.ParseUint(v, 10, 16)
		if err != nil {
			return ipcErrorf(ipc.IpcErrorInvalid, "failed to set persistent keepalive interval: %w", err)
		}
		if p != nil && uint16(secs) != p.keepalive {
			d.log.Verbosef("%v - UAPI: Updating persistent keepalive interval", p.public)
			p.keepalive = uint16(secs)
			d.cp.SetPersistentKeepalive(p.public, time.Duration(secs)*time.Second)
		}
	case "replace_allowed_ips":
		if v != "true" {
			return ipcErrorf(ipc.IpcErrorInvalid, "failed to replace allowedips, invalid value: %v", v)
		}
		if p != nil {
			d.log.Verbosef("%v - UAPI: Removing all allowedips", p.public)
			d.removeAllowedIPs(p)
		}
	case "allowed_ip":
		remove := strings.HasPrefix(v, "-")
		prefix, err := netip.ParsePrefix(strings.TrimPrefix(v, "-"))
		if err != nil {
			return ipcErrorf(ipc.IpcErrorInvalid, "failed to set allowed ip: %w", err)
		}
		switch {
		case p == nil:
		case remove:
			d.log.Verbosef("%v - UAPI: Removing allowedip", p.public)
			d.removeAllowedIP(p, prefix)
		default:
			d.log.Verbosef("%v - UAPI: Adding allowedip", p.public)
			d.addAllowedIP(p, prefix)
		}
	case "protocol_version":
		if v != "1" {
			return ipcErrorf(ipc.IpcErrorInvalid, "invalid protocol version: %v", v)
		}
	default:
		return ipcErrorf(ipc.IpcErrorInvalid, "invalid UAPI peer key: %v", k)
	}
	return nil
}

// parseHexKey decodes a key of exactly 64 hex digits into k, leaving k alone on error.
var (
	errKeyLength = errors.New("a key is 64 hex digits")
	errKeyHex    = errors.New("a key is hex digits only")
)

func parseHexKey(k *[32]byte, s string) error {
	// The errors name no digit of the value: it may be a private or preshared key, and they are
	// logged.
	if len(s) != 2*len(k) {
		return errKeyLength
	}
	b, err := hex.DecodeString(s)
	if err != nil {
		return errKeyHex
	}
	copy(k[:], b)
	clear(b)
	return nil
}

// IpcHandle serves one UAPI connection (from ipc.UAPIListen's listener, for wg(8)) until it
// closes or sends an unknown operation: "get=1" followed by an empty line, or "set=1" followed by
// lines up to an empty line; each reply ends with "errno=N" (0 for success) and an empty line.
func (d *Device) IpcHandle(socket net.Conn) {
	defer socket.Close()
	rw := bufio.NewReadWriter(bufio.NewReader(socket), bufio.NewWriter(socket))
	for {
		op, err := rw.ReadString('\n')
		if err != nil {
			return
		}
		switch op {
		case "set=1\n":
			err = d.IpcSetOperation(rw.Reader)
		case "get=1\n":
			var next byte
			if next, err = rw.ReadByte(); err != nil {
				return
			}
			if next != '\n' {
				err = ipcErrorf(ipc.IpcErrorInvalid, "trailing character in UAPI get: %q", next)
				break
			}
			err = d.IpcGetOperation(rw.Writer)
		default:
			d.log.Errorf("invalid UAPI operation: %v", op)
			return
		}
		var code int64
		if err != nil {
			var ie *IPCError
			if !errors.As(err, &ie) {
				ie = ipcErrorf(ipc.IpcErrorUnknown, "other UAPI error: %w", err)
			}
			d.log.Errorf("%v", ie)
			code = ie.ErrorCode()
		}
		fmt.Fprintf(rw, "errno=%d\n\n", code)
		rw.Flush()
	}
}
