// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

// Package wgquick reads wg-quick style configuration files and sets up the TUN interface they
// describe (addresses, MTU, routes for allowed IPs), for the example tunnel and for the wireguard-go
// peer the end-to-end tests run beside it.
package wgquick

import (
	"bufio"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"time"
)

// Config is a wg-quick style configuration: one [Interface] section and any number of [Peer] sections.
// Only the keys this tunnel implements are accepted; anything else is an error naming file and line,
// so a config never silently means less than it says.
type Config struct {
	Interface Interface
	Peers     []Peer
	// Warnings are problems that do not stop the tunnel, for the caller to show: a file that group
	// or others may read, as wg-quick warns.
	Warnings []string
}

// Interface is the [Interface] section.
type Interface struct {
	PrivateKey [32]byte
	ListenPort uint16         // 0: any free port
	Addresses  []netip.Prefix // addresses given to the TUN interface, with their subnet routes
	MTU        int            // of the TUN interface; DefaultMTU when absent
}

// Peer is one [Peer] section.
type Peer struct {
	PublicKey           [32]byte
	PresharedKey        [32]byte // all zero when absent, as WireGuard specifies
	AllowedIPs          []netip.Prefix
	Endpoint            netip.AddrPort // invalid (zero) when absent: the peer must contact us first
	PersistentKeepalive time.Duration  // 0: off
}

// DefaultMTU is wg-quick's default: a 1500-byte path minus the outer IPv6 (40) and UDP (8) headers and
// WireGuard's 32 bytes of header and tag.
const DefaultMTU = 1420

// minMTU and minMTUv6 are the smallest link MTUs IPv4 (RFC 791: every host accepts 576-byte
// datagrams) and IPv6 (RFC 8200 section 5: 1280) allow.
const (
	minMTU   = 576
	minMTUv6 = 1280
)

// Load reads and validates the configuration file at path.
func Load(path string) (*Config, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	cfg, err := Parse(path, f)
	if err != nil {
		return nil, err
	}
	if fi, err := f.Stat(); err == nil && fi.Mode().Perm()&0o077 != 0 {
		cfg.Warnings = append(cfg.Warnings, fmt.Sprintf("%s is accessible by group or others (mode %04o): "+
			"it holds a private key, make it readable by its owner only (chmod 600)", path, fi.Mode().Perm()))
	}
	return cfg, nil
}

// configError names the file, line and key a problem was found at.
type configError struct {
	file string
	line int
	key  string
	msg  string
}

func (e *configError) Error() string {
	where := e.file
	if e.line > 0 {
		where += ":" + strconv.Itoa(e.line)
	}
	if e.key != "" {
		return where + ": " + e.key + ": " + e.msg
	}
	return where + ": " + e.msg
}

// Parse parses a configuration read from r; name is used in error messages. Endpoint host names are
// resolved once, now, as wg-quick does.
func Parse(name string, r io.Reader) (*Config, error) {
	return parse(name, r, func(ctx context.Context, host string) ([]netip.Addr, error) {
		return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	})
}

// resolver returns the addresses of a host name.
type resolver func(ctx context.Context, host string) ([]netip.Addr, error)

// parse is Parse with the resolver of Endpoint host names given (tests resolve without a network).
func parse(name string, r io.Reader, resolve resolver) (*Config, error) {
	p := configParser{file: name, seen: map[string]int{}, resolve: resolve}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		p.line++
		if err := p.parseLine(sc.Text()); err != nil {
			return nil, err
		}
	}
	if err := sc.Err(); err != nil {
		return nil, &configError{file: name, line: p.line + 1, msg: err.Error()}
	}
	if err := p.finish(); err != nil {
		return nil, err
	}
	return &p.cfg, nil
}

type configParser struct {
	file    string
	line    int
	section string         // "", "interface" or "peer"
	seen    map[string]int // key -> line, within the current section
	cfg     Config

	interfaceLine int // line of [Interface], 0 when absent
	peerLine      int // line of the current [Peer]
	privateKeySet bool
	publicKeySet  bool
	peerLines     []int // line of each [Peer], for errors found after parsing
	resolve       resolver
}

// isKeyName reports whether s can be a key name: ASCII letters only, as every wg-quick key is.
func isKeyName(s string) bool {
	for i := range len(s) {
		if c := s[i] | 0x20; c < 'a' || c > 'z' {
			return false
		}
	}
	return s != ""
}

func (p *configParser) errorf(key, format string, args ...any) error {
	return &configError{file: p.file, line: p.line, key: key, msg: fmt.Sprintf(format, args...)}
}

func (p *configParser) parseLine(text string) error {
	if i := strings.IndexByte(text, '#'); i >= 0 {
		text = text[:i]
	}
	text = strings.TrimSpace(text)
	if text == "" {
		return nil
	}
	if strings.HasPrefix(text, "[") {
		return p.startSection(text)
	}
	// A malformed line is never echoed: it may hold a key (a base64 key ends in '=', so
	// "PrivateKey <key>" without its separator splits inside the key).
	key, value, ok := strings.Cut(text, "=")
	if !ok {
		return p.errorf("", "expected Key = Value (the line is not shown: it may hold a key)")
	}
	key, value = strings.TrimSpace(key), strings.TrimSpace(value)
	if key == "" {
		return p.errorf("", "missing key before '='")
	}
	if !isKeyName(key) {
		return p.errorf("", "expected Key = Value with a one-word key name (the line is not shown: it may hold a key)")
	}
	if p.section == "" {
		return p.errorf(key, "key outside any section (expected [Interface] or [Peer] first)")
	}
	lower := strings.ToLower(key)
	// List keys may repeat and accumulate, as in wg(8); a scalar given twice is almost always a
	// copy-paste mistake, so it is an error rather than last-one-wins.
	if first, dup := p.seen[lower]; dup && lower != "address" && lower != "allowedips" {
		return p.errorf(key, "given twice in one section (first on line %d)", first)
	}
	p.seen[lower] = p.line
	if p.section == "interface" {
		return p.interfaceKey(key, lower, value)
	}
	return p.peerKey(key, lower, value)
}

func (p *configParser) startSection(text string) error {
	if err := p.endPeer(); err != nil {
		return err
	}
	clear(p.seen)
	switch strings.ToLower(text) {
	case "[interface]":
		if p.interfaceLine != 0 {
			return p.errorf("", "second [Interface] section (first on line %d)", p.interfaceLine)
		}
		p.section, p.interfaceLine = "interface", p.line
	case "[peer]":
		p.section, p.peerLine, p.publicKeySet = "peer", p.line, false
		p.cfg.Peers = append(p.cfg.Peers, Peer{})
		p.peerLines = append(p.peerLines, p.line)
	default:
		return p.errorf("", "unknown section %s (expected [Interface] or [Peer])", text)
	}
	return nil
}

func (p *configParser) interfaceKey(key, lower, value string) error {
	ifc := &p.cfg.Interface
	switch lower {
	case "privatekey":
		k, err := parseKey(value)
		if err != nil {
			return p.errorf(key, "%v", err)
		}
		ifc.PrivateKey, p.privateKeySet = k, true
	case "listenport":
		port, err := strconv.ParseUint(value, 10, 16)
		if err != nil {
			return p.errorf(key, "%q is not a port number (0-65535)", value)
		}
		ifc.ListenPort = uint16(port)
	case "address":
		prefixes, err := parsePrefixList(value, false)
		if err != nil {
			return p.errorf(key, "%v", err)
		}
		ifc.Addresses = append(ifc.Addresses, prefixes...)
	case "mtu":
		mtu, err := strconv.Atoi(value)
		if err != nil || mtu < minMTU || mtu > 65535 {
			return p.errorf(key, "%q is not an MTU between %d and 65535", value, minMTU)
		}
		ifc.MTU = mtu
	default:
		return p.errorf(key, "unknown key in [Interface] (this tunnel knows PrivateKey, ListenPort, Address, MTU)")
	}
	return nil
}

func (p *configParser) peerKey(key, lower, value string) error {
	peer := &p.cfg.Peers[len(p.cfg.Peers)-1]
	switch lower {
	case "publickey":
		k, err := parseKey(value)
		if err != nil {
			return p.errorf(key, "%v", err)
		}
		peer.PublicKey, p.publicKeySet = k, true
	case "presharedkey":
		k, err := parseKey(value)
		if err != nil {
			return p.errorf(key, "%v", err)
		}
		peer.PresharedKey = k
	case "allowedips":
		prefixes, err := parsePrefixList(value, true)
		if err != nil {
			return p.errorf(key, "%v", err)
		}
		peer.AllowedIPs = append(peer.AllowedIPs, prefixes...)
	case "endpoint":
		ep, err := parseEndpoint(value, p.resolve)
		if err != nil {
			return p.errorf(key, "%v", err)
		}
		peer.Endpoint = ep
	case "persistentkeepalive":
		if strings.EqualFold(value, "off") {
			peer.PersistentKeepalive = 0
			return nil
		}
		secs, err := strconv.ParseUint(value, 10, 16)
		if err != nil {
			return p.errorf(key, "%q is not a number of seconds (0-65535) or off", value)
		}
		peer.PersistentKeepalive = time.Duration(secs) * time.Second
	default:
		return p.errorf(key, "unknown key in [Peer] (this tunnel knows PublicKey, PresharedKey, AllowedIPs, Endpoint, PersistentKeepalive)")
	}
	return nil
}

// endPeer validates the [Peer] section that just ended, if any.
func (p *configParser) endPeer() error {
	if p.section != "peer" || p.publicKeySet {
		return nil
	}
	return &configError{file: p.file, line: p.peerLine, msg: "[Peer] section without PublicKey"}
}

func (p *configParser) finish() error {
	if err := p.endPeer(); err != nil {
		return err
	}
	if p.interfaceLine == 0 {
		return &configError{file: p.file, msg: "no [Interface] section"}
	}
	ifc := &p.cfg.Interface
	if !p.privateKeySet {
		return &configError{file: p.file, line: p.interfaceLine, key: "PrivateKey", msg: "missing from [Interface]"}
	}
	if ifc.MTU == 0 {
		ifc.MTU = DefaultMTU
	}
	for _, a := range ifc.Addresses {
		if a.Addr().Is6() && ifc.MTU < minMTUv6 {
			return &configError{file: p.file, line: p.seen["mtu"], key: "MTU",
				msg: fmt.Sprintf("%d is below IPv6's minimum of %d, but Address has %s", ifc.MTU, minMTUv6, a)}
		}
	}
	firstPeer := map[[32]byte]int{}
	for i, peer := range p.cfg.Peers {
		if first, dup := firstPeer[peer.PublicKey]; dup {
			return &configError{file: p.file, line: p.peerLines[i], key: "PublicKey",
				msg: fmt.Sprintf("same peer as the [Peer] on line %d", first)}
		}
		firstPeer[peer.PublicKey] = p.peerLines[i]
	}
	return nil
}

// parseKey decodes a base64 Curve25519 key as wg(8) writes them: 32 bytes, 44 characters.
func parseKey(s string) ([32]byte, error) {
	var k [32]byte
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil || len(b) != len(k) {
		return k, fmt.Errorf("not a base64 32-byte key (44 characters, as wg genkey prints)")
	}
	copy(k[:], b)
	return k, nil
}

// parsePrefixList parses a comma-separated list of CIDR prefixes. Interface addresses keep their host
// bits (10.0.0.1/24 is address 10.0.0.1 on a /24); allowed IPs must not have any (a typo such as
// 10.0.0.1/8 would otherwise route far more than meant).
func parsePrefixList(s string, allowed bool) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, field := range strings.Split(s, ",") {
		field = strings.TrimSpace(field)
		if field == "" {
			continue
		}
		if !strings.Contains(field, "/") {
			addr, err := netip.ParseAddr(field)
			if err != nil {
				return nil, fmt.Errorf("%q is not an IP address or CIDR prefix", field)
			}
			out = append(out, netip.PrefixFrom(addr, addr.BitLen()))
			continue
		}
		prefix, err := netip.ParsePrefix(field)
		if err != nil {
			return nil, fmt.Errorf("%q is not a CIDR prefix", field)
		}
		if allowed && prefix != prefix.Masked() {
			return nil, fmt.Errorf("%q has host bits set (did you mean %s?)", field, prefix.Masked())
		}
		out = append(out, prefix)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("empty list")
	}
	return out, nil
}

// resolveTimeout bounds the name lookup of an Endpoint, so a dead resolver is an error, not a hang.
const resolveTimeout = 5 * time.Second

// parseEndpoint parses host:port, resolving a host name once at start as wg-quick does.
func parseEndpoint(s string, resolve resolver) (netip.AddrPort, error) {
	if ap, err := netip.ParseAddrPort(s); err == nil {
		if ap.Port() == 0 {
			return netip.AddrPort{}, fmt.Errorf("%q has port 0", s)
		}
		return ap, nil
	}
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("%q is not host:port", s)
	}
	portNum, err := strconv.ParseUint(port, 10, 16)
	if err != nil || portNum == 0 {
		return netip.AddrPort{}, fmt.Errorf("%q has no valid port", s)
	}
	ctx, cancel := context.WithTimeout(context.Background(), resolveTimeout)
	defer cancel()
	addrs, err := resolve(ctx, host)
	if err != nil || len(addrs) == 0 {
		return netip.AddrPort{}, fmt.Errorf("cannot resolve %q: %v", host, err)
	}
	return netip.AddrPortFrom(addrs[0].Unmap(), uint16(portNum)), nil
}
