// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package wgquick

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
	"golang.zx2c4.com/wireguard/tun"
)

// CreateTUN creates the TUN interface with a transmit queue of TxQueueLen packets. The kernel
// removes it, with its addresses and routes, when the returned device is closed (by every process
// holding it): the interface is not persistent, so nothing outlives the tunnel.
func CreateTUN(name string, mtu int) (tun.Device, error) {
	dev, err := tun.CreateTUN(name, mtu)
	if err != nil {
		if errors.Is(err, os.ErrPermission) || errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES) {
			return nil, fmt.Errorf("creating TUN interface %s needs root or CAP_NET_ADMIN: %w", name, err)
		}
		return nil, fmt.Errorf("creating TUN interface %s: %w", name, err)
	}
	// The name the kernel gave: a name with %d in it is a pattern.
	if name, err = dev.Name(); err == nil {
		var link netlink.Link
		if link, err = netlink.LinkByName(name); err == nil {
			err = netlink.LinkSetTxQLen(link, TxQueueLen)
		}
	}
	if err != nil {
		dev.Close()
		return nil, fmt.Errorf("setting the transmit queue length of %s to %d: %w", name, TxQueueLen, err)
	}
	return dev, nil
}

// TxQueueLen is the length of the interface's transmit queue: the packets the kernel holds for the
// tunnel to read. The data plane reads them a batch at a time (up to batch.MaxPackets) and keeps
// several batches in flight (Config.Batches), so a burst that arrives while they are busy must wait
// in this queue; the kernel's default of 500 overflows under bursts well below the pipeline's
// throughput (docs/experiments.md has the loss at each length). Only bursts queue: a sender above
// the tunnel's rate fills any queue within a fraction of a second, and TCP keeps its own share of
// it small (TCP small queues).
const TxQueueLen = 2000

// CheckRoutes refuses allowed IPs of prefix length 0 (0.0.0.0/0, ::/0), which ConfigureInterface
// cannot route: a default route through the tunnel also carries the tunnel's own UDP datagrams, and
// replacing the host's default route is not the tunnel's to do. wg-quick routes them in a table of
// their own, with rules that keep the tunnel's marked sockets out of it.
func CheckRoutes(cfg *Config) error {
	for _, peer := range cfg.Peers {
		for _, p := range peer.AllowedIPs {
			if p.Bits() == 0 {
				return fmt.Errorf("AllowedIPs %v: a default route through the tunnel needs policy routing, "+
					"which -config does not set up; run the tunnel under wg-quick instead: "+
					"WG_QUICK_USERSPACE_IMPLEMENTATION=tunnel wg-quick up FILE", p)
			}
		}
	}
	return nil
}

// ConfigureInterface gives the interface its addresses and MTU, brings it up, and routes every
// peer's allowed IPs that the addresses' own subnets do not already cover through it, as wg-quick
// does. It adds routes and never replaces one: a prefix the main table already routes elsewhere is
// an error. Routes and addresses go away with the interface.
func ConfigureInterface(name string, cfg *Config) error {
	if err := CheckRoutes(cfg); err != nil {
		return err
	}
	link, err := netlink.LinkByName(name)
	if err != nil {
		return fmt.Errorf("interface %s: %w", name, err)
	}
	if err := netlink.LinkSetMTU(link, cfg.Interface.MTU); err != nil {
		return fmt.Errorf("setting MTU %d on %s: %w", cfg.Interface.MTU, name, err)
	}
	for _, p := range cfg.Interface.Addresses {
		addr := &netlink.Addr{IPNet: prefixToIPNet(p)}
		if err := netlink.AddrAdd(link, addr); err != nil {
			return fmt.Errorf("adding address %s to %s: %w", p, name, err)
		}
	}
	if err := netlink.LinkSetUp(link); err != nil {
		return fmt.Errorf("bringing %s up: %w", name, err)
	}
	routed := map[netip.Prefix]bool{} // a prefix two peers list is routed once
	for _, peer := range cfg.Peers {
		for _, p := range peer.AllowedIPs {
			if coveredByAddress(p, cfg.Interface.Addresses) || routed[p.Masked()] {
				continue
			}
			routed[p.Masked()] = true
			route := &netlink.Route{LinkIndex: link.Attrs().Index, Dst: prefixToIPNet(p.Masked()), Scope: netlink.SCOPE_LINK}
			if err := netlink.RouteAdd(route); err != nil {
				if errors.Is(err, unix.EEXIST) {
					return fmt.Errorf("adding route %s via %s: the main table already routes %s", p, name, p.Masked())
				}
				return fmt.Errorf("adding route %s via %s: %w", p, name, err)
			}
		}
	}
	return nil
}

// coveredByAddress reports whether the subnet route the kernel adds for one of the interface's
// addresses already includes p.
func coveredByAddress(p netip.Prefix, addrs []netip.Prefix) bool {
	for _, a := range addrs {
		if a.Addr().Is4() == p.Addr().Is4() && a.Bits() <= p.Bits() && a.Masked().Contains(p.Addr()) {
			return true
		}
	}
	return false
}

func prefixToIPNet(p netip.Prefix) *net.IPNet {
	return &net.IPNet{IP: p.Addr().AsSlice(), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())}
}

// WatchDeleted returns a channel that is closed when the network interface name is deleted (an
// RTM_DELLINK for its index), until done is closed. A TUN whose interface is deleted does not always
// wake a blocked read, so the tunnel watches for it and exits rather than run half dead.
func WatchDeleted(name string, done <-chan struct{}) (<-chan struct{}, error) {
	link, err := netlink.LinkByName(name)
	if err != nil {
		return nil, err
	}
	index := link.Attrs().Index
	updates := make(chan netlink.LinkUpdate, 16)
	if err := netlink.LinkSubscribe(updates, done); err != nil {
		return nil, err
	}
	gone := make(chan struct{})
	go func() {
		for u := range updates {
			if u.Header.Type == unix.RTM_DELLINK && int(u.Index) == index {
				close(gone)
				for range updates { // until done closes the subscription
				}
				return
			}
		}
	}()
	return gone, nil
}
