// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package device_test

import (
	"fmt"
	"strings"

	"golang.zx2c4.com/wireguard/conn"
	"golang.zx2c4.com/wireguard/tun/tuntest"

	"github.com/wirebatch/wirebatch/device"
)

// An embedder of wireguard-go's device package switches by changing the import path: the calls are
// the same. (A real interface comes from tun.CreateTUN; the in-memory TUN keeps the example
// runnable anywhere.)
func Example() {
	tunDevice := tuntest.NewChannelTUN().TUN()
	dev := device.NewDevice(tunDevice, conn.NewDefaultBind(), device.NewLogger(device.LogLevelError, "wg0: "))
	defer dev.Close()

	err := dev.IpcSet(`private_key=a8dac1d8a70a751f0f699fb14ba1cff7b79cf4fbd8f09f44c6e6a90d0369604f
replace_peers=true
public_key=25123c5dcd3328ff645e4f2a3fce0d754400d3887a0cb7c56f0267e20fbf3c5b
endpoint=192.0.2.1:51820
allowed_ip=10.0.0.2/32
persistent_keepalive_interval=25
`)
	if err != nil {
		fmt.Println(err)
		return
	}
	conf, err := dev.IpcGet()
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, line := range strings.Split(conf, "\n") {
		if strings.HasPrefix(line, "public_key=") || strings.HasPrefix(line, "endpoint=") || strings.HasPrefix(line, "allowed_ip=") {
			fmt.Println(line)
		}
	}
	// Output:
	// public_key=25123c5dcd3328ff645e4f2a3fce0d754400d3887a0cb7c56f0267e20fbf3c5b
	// endpoint=192.0.2.1:51820
	// allowed_ip=10.0.0.2/32
}
