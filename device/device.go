// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package device

import (
	"net/netip"
	"sync"
	"time"

	"golang.zx2c4.com/wireguard/conn"
	"golang.zx2c4.com/wireguard/tun"

	"github.com/wirebatch/wirebatch/dataplane"
	"github.com/wirebatch/wirebatch/handshake"
)

// defaultMTU is the MTU assumed when the TUN cannot tell its own (wg-quick's default).
const defaultMTU = 1420

// Device is a WireGuard interface: a dataplane.Device between a TUN and the network, a
// handshake.ControlPlane and Identity for its keys, configured over UAPI (IpcSet, IpcGet). It
// starts down, with no private key and no peers; until it has a key it handshakes with nobody, so
// the traffic routed to its peers is dropped. All methods are safe for concurrent use.
type Device struct {
	log Logger
	tun tun.Device
	net *netBind
	id  *handshake.Identity
	cp  *handshake.ControlPlane
	dp  *dataplane.Device

	// ipcMu orders configuration: IpcSet and Close hold it exclusively, IpcGet and Up shared. It
	// guards the fields below.
	ipcMu    sync.RWMutex
	private  handshake.PrivateKey
	peers    map[handshake.PublicKey]*peer
	order    []*peer                // peers in the order they were added: IpcGet lists them so
	prefixes map[netip.Prefix]*peer // owner of each allowed IP (masked), mirroring the data plane's table

	// stateMu serialises Up, Down and Close; state is changed under it.
	stateMu sync.Mutex
	state   deviceState
	closed  chan struct{}
}

type deviceState int

const (
	stateDown deviceState = iota
	stateUp
	stateClosed
)

func (s deviceState) String() string {
	return [...]string{"down", "up", "closed"}[s]
}

// peer is the UAPI's view of one peer: what IpcGet reports that the data and control planes do not
// keep in the form UAPI wants.
type peer struct {
	public    handshake.PublicKey
	psk       handshake.PresharedKey
	dp        *dataplane.Peer
	keepalive uint16 // persistent keepalive interval, seconds (0: off)
	// allowed are the peer's allowed IPs in the order they were added, as wireguard-go lists them.
	allowed []netip.Prefix
}

// NewDevice returns a Device, down, on tunDevice and bind: any tun.Device and conn.Bind of
// golang.zx2c4.com/wireguard. The Device owns the TUN from now on (Close closes it), and opens and
// closes the bind as it goes up and down and changes its port.
//
// When bind is the standard bind (conn.NewStdNetBind or conn.NewDefaultBind on Linux), or nil, the
// Device opens sockets of its own instead (udp.Listen: batched reads and writes with GRO and
// GSO where the kernel has them), on the same port, with the same fwmark; bind only parses
// endpoints then. Any other bind carries every datagram. A TUN that exposes a Linux TUN file with
// virtio-net headers (tun.CreateTUN's) is read and written through its offloads
// (dataplane.NewDevice).
//
// The TUN's events drive the state as in wireguard-go: the interface going up brings the Device up
// and going down brings it down (tun.CreateTUN's TUN reports the link's state; tuntest's reports up
// at once); Up and Down do the same by hand.
func NewDevice(tunDevice tun.Device, bind conn.Bind, logger *Logger) *Device {
	d := &Device{
		log:      logger.orDiscard(),
		tun:      tunDevice,
		peers:    make(map[handshake.PublicKey]*peer),
		prefixes: make(map[netip.Prefix]*peer),
		closed:   make(chan struct{}),
	}
	mtu, err := tunDevice.MTU()
	if err != nil {
		d.log.Errorf("Trouble determining MTU, assuming default: %v", err)
		mtu = defaultMTU
	}
	// The data plane sizes its buffers once for MTU; an MTU outside what it takes is clamped,
	// which only limits the packets it carries.
	if mtu < 576 || mtu > 65535 {
		d.log.Errorf("MTU %d out of range, using %d", mtu, min(max(mtu, 576), 65535))
		mtu = min(max(mtu, 576), 65535)
	}
	d.net = newNetBind(bind, max(mtu, 1500)+dataplane.Overhead, d.log.Errorf)
	d.id = handshake.NewIdentity(handshake.PrivateKey{}, handshake.Limits{})
	d.cp = handshake.NewControlPlane(d.id, d.log.Verbosef)
	d.dp, err = dataplane.NewDevice(tunDevice, d.net, dataplane.Config{MTU: mtu, Handshaker: d.cp})
	if err != nil {
		// Only a failed allocation of its fixed memory gets here: a Device that is closed from
		// the start, as wireguard-go's NewDevice has no error to return.
		d.log.Errorf("Creating the data path: %v", err)
		tunDevice.Close()
		d.state = stateClosed
		d.peers = nil // IpcSet refuses, as after Close
		close(d.closed)
		return d
	}
	go d.watch()
	go d.tunEvents()
	return d
}

// watch closes the Device when its data path stops by itself (the TUN deleted, a socket broken).
func (d *Device) watch() {
	select {
	case <-d.dp.Wait():
		if err := d.dp.Err(); err != nil {
			d.log.Errorf("Data path stopped: %v", err)
			d.Close()
		}
	case <-d.closed:
	}
}

// tunEvents follows the TUN's events: up and down, and MTU changes (logged: the data path keeps the
// MTU it was created with).
func (d *Device) tunEvents() {
	events := d.tun.Events()
	for {
		var ev tun.Event
		var ok bool
		select {
		case ev, ok = <-events:
		case <-d.closed:
			return
		}
		if !ok {
			return
		}
		if ev&tun.EventMTUUpdate != 0 {
			if mtu, err := d.tun.MTU(); err == nil {
				d.log.Verbosef("MTU of the interface now %d; the data path keeps its own", mtu)
			}
		}
		if ev&tun.EventUp != 0 {
			d.log.Verbosef("Interface up requested")
			d.Up()
		}
		if ev&tun.EventDown != 0 {
			d.log.Verbosef("Interface down requested")
			d.Down()
		}
	}
}

// Up opens the sockets on the listen port (the Device then sends and receives); it does nothing if
// the Device is up or closed.
func (d *Device) Up() error {
	d.stateMu.Lock()
	defer d.stateMu.Unlock()
	if d.state != stateDown {
		return nil
	}
	if err := d.net.open(); err != nil {
		d.log.Errorf("Unable to update bind: %v", err)
		return err
	}
	d.state = stateUp
	d.log.Verbosef("Interface state was down, requested up, now up")
	// Peers with a persistent keepalive announce themselves at once, as on creation.
	d.ipcMu.RLock()
	defer d.ipcMu.RUnlock()
	for _, p := range d.order {
		if p.keepalive > 0 {
			d.cp.SetPersistentKeepalive(p.public, time.Duration(p.keepalive)*time.Second)
		}
	}
	return nil
}

// Down closes the sockets: nothing is sent or received until Up. Peers, keys and sessions stay.
func (d *Device) Down() error {
	d.stateMu.Lock()
	defer d.stateMu.Unlock()
	if d.state != stateUp {
		return nil
	}
	d.state = stateDown
	err := d.net.down()
	if err != nil {
		d.log.Errorf("Bind close failed: %v", err)
	}
	d.log.Verbosef("Interface state was up, requested down, now down")
	return err
}

// Close stops the Device for good: it closes the TUN and the sockets, stops every goroutine and
// destroys the keys. Wait's channel is closed then.
func (d *Device) Close() {
	d.stateMu.Lock()
	defer d.stateMu.Unlock()
	if d.state == stateClosed {
		return
	}
	d.state = stateClosed
	d.log.Verbosef("Device closing")
	d.ipcMu.Lock()
	defer d.ipcMu.Unlock()
	d.dp.Close()
	d.cp.Close()
	for _, p := range d.order {
		d.cp.RemovePeer(p.public)
	}
	d.cp.SetPrivateKey(handshake.PrivateKey{})
	clear(d.private[:])
	d.peers, d.order, d.prefixes = nil, nil, nil
	close(d.closed)
	d.log.Verbosef("Device closed")
}

// Wait returns a channel that is closed when the Device is closed: by Close, or when its TUN or
// its sockets failed for good.
func (d *Device) Wait() chan struct{} { return d.closed }

// BatchSize is the most packets the Device moves in one read or write: the larger of the TUN's and
// the network side's.
func (d *Device) BatchSize() int { return max(d.net.BatchSize(), d.tun.BatchSize()) }

// addPeer creates the peer with public key pub, without allowed IPs or endpoint.
func (d *Device) addPeer(pub handshake.PublicKey) (*peer, error) {
	dp, err := d.cp.AddPeer(handshake.PeerSettings{PublicKey: pub})
	if err != nil {
		return nil, err
	}
	p := &peer{public: pub, dp: dp}
	d.peers[pub] = p
	d.order = append(d.order, p)
	return p, nil
}

// removePeer removes p from every layer, its keys destroyed.
func (d *Device) removePeer(p *peer) {
	d.cp.RemovePeer(p.public)
	for _, pr := range p.allowed {
		delete(d.prefixes, pr)
	}
	delete(d.peers, p.public)
	for i, q := range d.order {
		if q == p {
			d.order = append(d.order[:i], d.order[i+1:]...)
			break
		}
	}
}

// setPrivateKey changes the identity at run time (see handshake.ControlPlane.SetPrivateKey).
func (d *Device) setPrivateKey(k handshake.PrivateKey) {
	if k == d.private {
		return
	}
	if !k.IsZero() {
		if p := d.peers[k.PublicKey()]; p != nil {
			d.removePeer(p)
		}
	}
	d.cp.SetPrivateKey(k)
	d.private = k
}

// addAllowedIP gives prefix to p, taking it from its previous owner, as WireGuard's table does. It
// goes to the end of p's list even if p owned it already, where wireguard-go lists it too.
func (d *Device) addAllowedIP(p *peer, prefix netip.Prefix) {
	prefix = prefix.Masked()
	if old := d.prefixes[prefix]; old != nil {
		old.allowed = without(old.allowed, prefix)
	}
	p.allowed = append(p.allowed, prefix)
	d.prefixes[prefix] = p
	d.dp.Peers().AllowedIPs().Insert(prefix, p.dp)
}

// removeAllowedIP takes prefix from p, if p owns it.
func (d *Device) removeAllowedIP(p *peer, prefix netip.Prefix) {
	prefix = prefix.Masked()
	if d.prefixes[prefix] != p {
		return
	}
	delete(d.prefixes, prefix)
	p.allowed = without(p.allowed, prefix)
	d.dp.Peers().AllowedIPs().Remove(prefix)
}

// removeAllowedIPs takes every allowed IP from p.
func (d *Device) removeAllowedIPs(p *peer) {
	for _, pr := range p.allowed {
		delete(d.prefixes, pr)
	}
	p.allowed = nil
	d.dp.Peers().AllowedIPs().RemovePeer(p.dp)
}

func without(ps []netip.Prefix, p netip.Prefix) []netip.Prefix {
	for i, q := range ps {
		if q == p {
			return append(ps[:i], ps[i+1:]...)
		}
	}
	return ps
}
