// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

// Command wgpeer runs wireguard-go (golang.zx2c4.com/wireguard/device) from the same wg-quick style
// configuration as the example tunnel, so end-to-end tests and benchmarks can put the reference
// implementation at either end of a link and compare or interoperate with ours.
//
//	wgpeer -config FILE [-iface NAME] [-v]
package main

import (
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"golang.zx2c4.com/wireguard/conn"
	"golang.zx2c4.com/wireguard/device"

	"github.com/wirebatch/wirebatch/examples/tunnel/wgquick"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "wgpeer:", err)
		os.Exit(1)
	}
}

func run() error {
	configPath := flag.String("config", "", "wg-quick style configuration file")
	iface := flag.String("iface", "wg0", "name of the TUN interface to create")
	verbose := flag.Bool("v", false, "log wireguard-go's debug messages")
	flag.Parse()
	if *configPath == "" || flag.NArg() > 0 {
		return fmt.Errorf("usage: wgpeer -config FILE [-iface NAME] [-v]")
	}
	cfg, err := wgquick.Load(*configPath)
	if err != nil {
		return err
	}
	tunDev, err := wgquick.CreateTUN(*iface, cfg.Interface.MTU)
	if err != nil {
		return err
	}
	level := device.LogLevelError
	if *verbose {
		level = device.LogLevelVerbose
	}
	dev := device.NewDevice(tunDev, conn.NewDefaultBind(), device.NewLogger(level, "wgpeer: "))
	defer dev.Close()
	if err := dev.IpcSet(uapiConfig(cfg)); err != nil {
		return fmt.Errorf("configuring wireguard-go: %w", err)
	}
	if err := dev.Up(); err != nil {
		return err
	}
	if err := wgquick.ConfigureInterface(*iface, cfg); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "wgpeer: %s up with %d peers\n", *iface, len(cfg.Peers))
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	select {
	case <-sig:
	case <-dev.Wait():
	}
	return nil
}

// uapiConfig renders cfg in wireguard-go's configuration protocol (hex keys, one key=value per line).
func uapiConfig(cfg *wgquick.Config) string {
	var b strings.Builder
	fmt.Fprintf(&b, "private_key=%s\nlisten_port=%d\nreplace_peers=true\n", hex.EncodeToString(cfg.Interface.PrivateKey[:]), cfg.Interface.ListenPort)
	for _, p := range cfg.Peers {
		fmt.Fprintf(&b, "public_key=%s\n", hex.EncodeToString(p.PublicKey[:]))
		if p.PresharedKey != [32]byte{} {
			fmt.Fprintf(&b, "preshared_key=%s\n", hex.EncodeToString(p.PresharedKey[:]))
		}
		if p.Endpoint.IsValid() {
			fmt.Fprintf(&b, "endpoint=%s\n", p.Endpoint)
		}
		if p.PersistentKeepalive > 0 {
			fmt.Fprintf(&b, "persistent_keepalive_interval=%d\n", int(p.PersistentKeepalive.Seconds()))
		}
		for _, a := range p.AllowedIPs {
			fmt.Fprintf(&b, "allowed_ip=%s\n", a)
		}
	}
	return b.String()
}
