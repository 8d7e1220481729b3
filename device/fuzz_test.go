// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package device

import (
	"encoding/hex"
	"strings"
	"testing"

	"github.com/wirebatch/wirebatch/handshake"
)

// FuzzUAPIConformance is TestUAPIConformance on arbitrary input: a configuration with two peers,
// then the fuzzer's set operation, applied to our Device and to wireguard-go's, must give the same
// errno and the same IpcGet output, and neither may panic. wg(8) and wg-quick talk to both through
// this text, so any difference is one a user of wireguard-go's tools would meet.
func FuzzUAPIConformance(f *testing.F) {
	var priv, pub [3]string
	for i := range priv {
		var sk handshake.PrivateKey
		for j := range sk {
			sk[j] = byte(17*i + j)
		}
		pk := sk.Clamped().PublicKey()
		priv[i], pub[i] = hex.EncodeToString(sk[:]), hex.EncodeToString(pk[:])
	}
	base := "private_key=" + priv[0] + "\nlisten_port=51820\nreplace_peers=true\n" +
		"public_key=" + pub[1] + "\nendpoint=192.0.2.1:51820\nallowed_ip=10.0.1.0/24\nallowed_ip=fd00::/64\n" +
		"public_key=" + pub[2] + "\npersistent_keepalive_interval=25\nallowed_ip=10.0.2.0/24\n"
	for _, seed := range []string{
		"",
		base,
		"listen_port=51821\nfwmark=7\n",
		"private_key=" + priv[1] + "\n",
		"public_key=" + pub[1] + "\nremove=true\n",
		"public_key=" + pub[2] + "\nupdate_only=true\nallowed_ip=-10.0.2.0/24\nallowed_ip=10.0.1.0/25\n",
		"public_key=" + pub[1] + "\nreplace_allowed_ips=true\nendpoint=[2001:db8::1]:1\nprotocol_version=1\n",
		"public_key=" + strings.ToUpper(pub[1]) + "\npreshared_key=" + strings.Repeat("ab", 32) + "\n",
		"replace_peers=true\nlisten_port=0\n",
		"public_key=" + pub[2] + "\nallowed_ip=10.0.1.0/24\n\nfoo=bar\n",
		"listen_port= 1\nfwmark=+7\nprivate_key\n",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, set string) {
		if len(set) > 4096 {
			return // more lines only repeat what short inputs reach, slower
		}
		ours, theirs := newDevicePair(t)
		for i, conf := range []string{base, set} {
			errOurs, errTheirs := ours.IpcSet(conf), theirs.IpcSet(conf)
			if a, b := errorCode(t, errOurs), errorCode(t, errTheirs); a != b {
				t.Fatalf("set %d %q: errno %d (%v), wireguard-go %d (%v)", i, conf, a, errOurs, b, errTheirs)
			}
			if a, b := normalizedGet(t, ours), normalizedGet(t, theirs); a != b {
				t.Fatalf("after set %d %q:\nours:\n%s\nwireguard-go:\n%s", i, conf, a, b)
			}
		}
	})
}
