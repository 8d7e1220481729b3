// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package quic

import (
	"bytes"
	"encoding/hex"
	"strings"
	"testing"
)

// Known answers of RFC 9001 appendix A (QUIC version 1) and RFC 9369 appendix A (version 2), byte
// for byte both ways.

func unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.Join(strings.Fields(s), ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// rfc9001ClientCrypto is the CRYPTO frame of RFC 9001 appendix A.2 (and RFC 9369 A.2), padded with
// PADDING frames to 1162 bytes.
const rfc9001ClientCrypto = `060040f1010000ed0303ebf8fa56f129 39b9584a3896472ec40bb863cfd3e868
04fe3a47f06a2b69484c000004130113 02010000c000000010000e00000b6578 616d706c652e636f6dff01000100000a
00080006001d00170018001000070005 04616c706e0005000501000000000033 00260024001d00209370b2c9caa47fba
baf4559fedba753de171fa71f50f1ce1 5d43e994ec74d748002b000302030400 0d0010000e0403050306030203080408
050806002d00020101001c0002400100 3900320408ffffffffffffffff050480 00ffff07048000ffff08011001048000
75300901100f088394c8f03e51570806 048000ffff`

// rfc9001ServerPayload is the server Initial's payload of RFC 9001 appendix A.3 (and RFC 9369 A.3).
const rfc9001ServerPayload = `02000000000600405a020000560303ee fce7f7b37ba1d1632e96677825ddf739
88cfc79825df566dc5430b9a045a1200 130100002e00330024001d00209d3c94 0d89690b84d08a60993c144eca684d10
81287c834d5311bcf32bb9da1a002b00 020304`

var initialVectors = []struct {
	name     string
	version  Version
	server   bool
	header   string // unprotected, through the packet number
	pnOffset int
	pn       uint64
	payload  string
	pad      int // the payload's length after PADDING
	packet   string
}{
	{
		name: "RFC 9001 A.2 client Initial", version: Version1, header: "c300000001088394c8f03e5157080000449e00000002",
		pnOffset: 18, pn: 2, payload: rfc9001ClientCrypto, pad: 1162, packet: `
c000000001088394c8f03e5157080000 449e7b9aec34d1b1c98dd7689fb8ec11 d242b123dc9bd8bab936b47d92ec356c 0bab7df5976d27cd449f63300099f399
1c260ec4c60d17b31f8429157bb35a12 82a643a8d2262cad67500cadb8e7378c 8eb7539ec4d4905fed1bee1fc8aafba1 7c750e2c7ace01e6005f80fcb7df6212
30c83711b39343fa028cea7f7fb5ff89 eac2308249a02252155e2347b63d58c5 457afd84d05dfffdb20392844ae81215 4682e9cf012f9021a6f0be17ddd0c208
4dce25ff9b06cde535d0f920a2db1bf3 62c23e596d11a4f5a6cf3948838a3aec 4e15daf8500a6ef69ec4e3feb6b1d98e 610ac8b7ec3faf6ad760b7bad1db4ba3
485e8a94dc250ae3fdb41ed15fb6a8e5 eba0fc3dd60bc8e30c5c4287e53805db 059ae0648db2f64264ed5e39be2e20d8 2df566da8dd5998ccabdae053060ae6c
7b4378e846d29f37ed7b4ea9ec5d82e7 961b7f25a9323851f681d582363aa5f8 9937f5a67258bf63ad6f1a0b1d96dbd4 faddfcefc5266ba6611722395c906556
be52afe3f565636ad1b17d508b73d874 3eeb524be22b3dcbc2c7468d54119c74 68449a13d8e3b95811a198f3491de3e7 fe942b330407abf82a4ed7c1b311663a
c69890f4157015853d91e923037c227a 33cdd5ec281ca3f79c44546b9d90ca00 f064c99e3dd97911d39fe9c5d0b23a22 9a234cb36186c4819e8b9c5927726632
291d6a418211cc2962e20fe47feb3edf 330f2c603a9d48c0fcb5699dbfe58964 25c5bac4aee82e57a85aaf4e2513e4f0 5796b07ba2ee47d80506f8d2c25e50fd
14de71e6c418559302f939b0e1abd576 f279c4b2e0feb85c1f28ff18f58891ff ef132eef2fa09346aee33c28eb130ff2 8f5b766953334113211996d20011a198
e3fc433f9f2541010ae17c1bf202580f 6047472fb36857fe843b19f5984009dd c324044e847a4f4a0ab34f719595de37 252d6235365e9b84392b061085349d73
203a4a13e96f5432ec0fd4a1ee65accd d5e3904df54c1da510b0ff20dcc0c77f cb2c0e0eb605cb0504db87632cf3d8b4 dae6e705769d1de354270123cb11450e
fc60ac47683d7b8d0f811365565fd98c 4c8eb936bcab8d069fc33bd801b03ade a2e1fbc5aa463d08ca19896d2bf59a07 1b851e6c239052172f296bfb5e724047
90a2181014f3b94a4e97d117b4381303 68cc39dbb2d198065ae3986547926cd2 162f40a29f0c3c8745c0f50fba3852e5 66d44575c29d39a03f0cda721984b6f4
40591f355e12d439ff150aab7613499d bd49adabc8676eef023b15b65bfc5ca0 6948109f23f350db82123535eb8a7433 bdabcb909271a6ecbcb58b936a88cd4e
8f2e6ff5800175f113253d8fa9ca8885 c2f552e657dc603f252e1a8e308f76f0 be79e2fb8f5d5fbbe2e30ecadd220723 c8c0aea8078cdfcb3868263ff8f09400
54da48781893a7e49ad5aff4af300cd8 04a6b6279ab3ff3afb64491c85194aab 760d58a606654f9f4400e8b38591356f bf6425aca26dc85244259ff2b19c41b9
f96f3ca9ec1dde434da7d2d392b905dd f3d1f9af93d1af5950bd493f5aa731b4 056df31bd267b6b90a079831aaf579be 0a39013137aac6d404f518cfd4684064
7e78bfe706ca4cf5e9c5453e9f7cfd2b 8b4c8d169a44e55c88d4a9a7f9474241 e221af44860018ab0856972e194cd934`,
	},
	{
		name: "RFC 9001 A.3 server Initial", version: Version1, server: true, header: "c1000000010008f067a5502a4262b50040750001",
		pnOffset: 18, pn: 1, payload: rfc9001ServerPayload, packet: `
cf000000010008f067a5502a4262b500 4075c0d95a482cd0991cd25b0aac406a 5816b6394100f37a1c69797554780bb3 8cc5a99f5ede4cf73c3ec2493a1839b3
dbcba3f6ea46c5b7684df3548e7ddeb9 c3bf9c73cc3f3bded74b562bfb19fb84 022f8ef4cdd93795d77d06edbb7aaf2f 58891850abbdca3d20398c276456cbc4
2158407dd074ee`,
	},
	{
		name: "RFC 9369 A.2 client Initial", version: Version2, header: "d36b3343cf088394c8f03e5157080000449e00000002",
		pnOffset: 18, pn: 2, payload: rfc9001ClientCrypto, pad: 1162, packet: `
d76b3343cf088394c8f03e5157080000 449ea0c95e82ffe67b6abcdb4298b485 dd04de806071bf03dceebfa162e75d6c 96058bdbfb127cdfcbf903388e99ad04
9f9a3dd4425ae4d0992cfff18ecf0fdb 5a842d09747052f17ac2053d21f57c5d 250f2c4f0e0202b70785b7946e992e58 a59ac52dea6774d4f03b55545243cf1a
12834e3f249a78d395e0d18f4d766004 f1a2674802a747eaa901c3f10cda5500 cb9122faa9f1df66c392079a1b40f0de 1c6054196a11cbea40afb6ef5253cd68
18f6625efce3b6def6ba7e4b37a40f77 32e093daa7d52190935b8da58976ff33 12ae50b187c1433c0f028edcc4c2838b 6a9bfc226ca4b4530e7a4ccee1bfa2a3
d396ae5a3fb512384b2fdd851f784a65 e03f2c4fbe11a53c7777c023462239dd 6f7521a3f6c7d5dd3ec9b3f233773d4b 46d23cc375eb198c63301c21801f6520
bcfb7966fc49b393f0061d974a2706df 8c4a9449f11d7f3d2dcbb90c6b877045 636e7c0c0fe4eb0f697545460c806910 d2c355f1d253bc9d2452aaa549e27a1f
ac7cf4ed77f322e8fa894b6a83810a34 b361901751a6f5eb65a0326e07de7c12 16ccce2d0193f958bb3850a833f7ae43 2b65bc5a53975c155aa4bcb4f7b2c4e5
4df16efaf6ddea94e2c50b4cd1dfe060 17e0e9d02900cffe1935e0491d77ffb4 fdf85290fdd893d577b1131a610ef6a5 c32b2ee0293617a37cbb08b847741c3b
8017c25ca9052ca1079d8b78aebd4787 6d330a30f6a8c6d61dd1ab5589329de7 14d19d61370f8149748c72f132f0fc99 f34d766c6938597040d8f9e2bb522ff9
9c63a344d6a2ae8aa8e51b7b90a4a806 105fcbca31506c446151adfeceb51b91 abfe43960977c87471cf9ad4074d30e1 0d6a7f03c63bd5d4317f68ff325ba3bd
80bf4dc8b52a0ba031758022eb025cdd 770b44d6d6cf0670f4e990b22347a7db 848265e3e5eb72dfe8299ad7481a4083 22cac55786e52f633b2fb6b614eaed18
d703dd84045a274ae8bfa73379661388 d6991fe39b0d93debb41700b41f90a15 c4d526250235ddcd6776fc77bc97e7a4 17ebcb31600d01e57f32162a8560cacc
7e27a096d37a1a86952ec71bd89a3e9a 30a2a26162984d7740f81193e8238e61 f6b5b984d4d3dfa033c1bb7e4f0037fe bf406d91c0dccf32acf423cfa1e70710
10d3f270121b493ce85054ef58bada42 310138fe081adb04e2bd901f2f13458b 3d6758158197107c14ebb193230cd115 7380aa79cae1374a7c1e5bbcb80ee23e
06ebfde206bfb0fcbc0edc4ebec30966 1bdd908d532eb0c6adc38b7ca7331dce 8dfce39ab71e7c32d318d136b6100671 a1ae6a6600e3899f31f0eed19e3417d1
34b90c9058f8632c798d4490da498730 7cba922d61c39805d072b589bd52fdf1 e86215c2d54e6670e07383a27bbffb5a ddf47d66aa85a0c6f9f32e59d85a44dd
5d3b22dc2be80919b490437ae4f36a0a e55edf1d0b5cb4e9a3ecabee93dfc6e3 8d209d0fa6536d27a5d6fbb17641cde2 7525d61093f1b28072d111b2b4ae5f89
d5974ee12e5cf7d5da4d6a31123041f3 3e61407e76cffcdcfd7e19ba58cf4b53 6f4c4938ae79324dc402894b44faf8af bab35282ab659d13c93f70412e85cb19
9a37ddec600545473cfb5a05e08d0b20 9973b2172b4d21fb69745a262ccde96b a18b2faa745b6fe189cf772a9f84cbfc`,
	},
	{
		name: "RFC 9369 A.3 server Initial", version: Version2, server: true, header: "d16b3343cf0008f067a5502a4262b50040750001",
		pnOffset: 18, pn: 1, payload: rfc9001ServerPayload, packet: `
dc6b3343cf0008f067a5502a4262b500 4075d92faaf16f05d8a4398c47089698 baeea26b91eb761d9b89237bbf872630 17915358230035f7fd3945d88965cf17
f9af6e16886c61bfc703106fbaf3cb4c fa52382dd16a393e42757507698075b2 c984c707f0a0812d8cd5a6881eaf21ce da98f4bd23f6fe1a3e2c43edd9ce7ca8
4bed8521e2e140`,
	},
}

func TestInitialVectors(t *testing.T) {
	dcid := unhex(t, "8394c8f03e515708")
	for _, v := range initialVectors {
		t.Run(v.name, func(t *testing.T) {
			client, server := NewInitialKeys(v.version, dcid)
			k := client
			if v.server {
				k = server
			}
			payload := unhex(t, v.payload)
			if v.pad > 0 {
				payload = append(payload, make([]byte, v.pad-len(payload))...)
			}
			plain := append(unhex(t, v.header), payload...)
			want := unhex(t, v.packet)
			buf := make([]byte, len(plain), len(plain)+16)
			copy(buf, plain)
			pkts := []Packet{{Buf: buf, PNOffset: v.pnOffset, PN: v.pn}}
			k.Seal(pkts)
			if !bytes.Equal(pkts[0].Buf, want) {
				t.Fatalf("Seal differs from the RFC's packet\n got %x\nwant %x", pkts[0].Buf, want)
			}
			open := []Packet{{Buf: append([]byte(nil), want...), PNOffset: v.pnOffset}}
			if failed := k.Open(open, -1); failed != 0 || open[0].Err != nil {
				t.Fatalf("Open of the RFC's packet failed: %v", open[0].Err)
			}
			if open[0].PN != v.pn || !bytes.Equal(open[0].Buf, plain) {
				t.Fatalf("Open gave packet number %d and %x, want %d and the unprotected packet", open[0].PN, open[0].Buf, v.pn)
			}
		})
	}
}

// TestKeyDerivation: RFC 9001 appendix A.1's Initial keys and A.5's 1-RTT keys and key update secret.
func TestKeyDerivation(t *testing.T) {
	client, server := NewInitialKeys(Version1, unhex(t, "8394c8f03e515708"))
	for _, c := range []struct {
		name           string
		k              *Keys
		secret, iv, hp string
	}{
		{"client", client, "c00cf151ca5be075ed0ebfb5c80323c42d6b7db67881289af4008f1f6c357aea", "fa044b2f42a3fd3b46fb255c", "9f50449e04a0e810283a1e9933adedd2"},
		{"server", server, "3c199828fd139efd216c155ad844cc81fb82fa8d7446fa7d78be803acdda951b", "0ac1493ca1905853b0bba03e", "c206b8d9b9f0f37644430b490eeaa314"},
	} {
		if hex.EncodeToString(c.k.secret) != c.secret || hex.EncodeToString(c.k.iv[:]) != c.iv || hex.EncodeToString(c.k.hpRaw) != c.hp {
			t.Errorf("%s Initial keys differ from RFC 9001 A.1", c.name)
		}
	}
	k, err := NewKeys(Version1, ChaCha20Poly1305, unhex(t, "9ac312a7f877468ebe69422748ad00a15443f18203a07d6060f688f30f21632b"))
	if err != nil {
		t.Fatal(err)
	}
	if hex.EncodeToString(k.iv[:]) != "e0459b3474bdd0e44a41c144" ||
		hex.EncodeToString(k.hpRaw) != "25a282b9e82f06f21f488917a4fc8f1b73573685608597d0efcb076b0ab7a7a4" {
		t.Errorf("A.5 keys differ from RFC 9001")
	}
	next, err := k.Next()
	if err != nil {
		t.Fatal(err)
	}
	if got := hex.EncodeToString(next.secret); got != "1223504755036d556342ee9361d253421a826c9ecdf3c7148684b36b714881f9" {
		t.Errorf("Next's secret %s differs from RFC 9001 A.5's ku", got)
	}
	if !bytes.Equal(next.hpRaw, k.hpRaw) {
		t.Errorf("Next changed the header protection key")
	}
}

// TestChaChaShortHeader is RFC 9001 appendix A.5: a minimal 1-RTT packet under ChaCha20-Poly1305.
func TestChaChaShortHeader(t *testing.T) {
	k, err := NewKeys(Version1, ChaCha20Poly1305, unhex(t, "9ac312a7f877468ebe69422748ad00a15443f18203a07d6060f688f30f21632b"))
	if err != nil {
		t.Fatal(err)
	}
	plain := unhex(t, "4200bff401")
	buf := make([]byte, len(plain), len(plain)+16)
	copy(buf, plain)
	pkts := []Packet{{Buf: buf, PNOffset: 1, PN: 654360564}}
	k.Seal(pkts)
	want := unhex(t, "4cfe4189655e5cd55c41f69080575d7999c25a5bfb")
	if !bytes.Equal(pkts[0].Buf, want) {
		t.Fatalf("Seal = %x, want %x", pkts[0].Buf, want)
	}
	open := []Packet{{Buf: append([]byte(nil), want...), PNOffset: 1}}
	if k.Open(open, 654360563) != 0 || open[0].PN != 654360564 || !bytes.Equal(open[0].Buf, plain) {
		t.Fatalf("Open = %x, PN %d, %v", open[0].Buf, open[0].PN, open[0].Err)
	}
}

// TestRetryVectors is RFC 9001 appendix A.4 and RFC 9369 appendix A.4: the Retry packet that answers
// the client Initial of A.2, its tag computed and verified, and verified under its own version only.
func TestRetryVectors(t *testing.T) {
	odcid := unhex(t, "8394c8f03e515708")
	for _, c := range []struct {
		name        string
		v, other    Version
		packet, tag string
	}{
		{"RFC 9001 A.4", Version1, Version2, "ff000000010008f067a5502a4262b574 6f6b656e04a265ba2eff4d829058fb3f 0f2496ba", "04a265ba2eff4d829058fb3f0f2496ba"},
		{"RFC 9369 A.4", Version2, Version1, "cf6b3343cf0008f067a5502a4262b574 6f6b656ec8646ce8bfe33952d9555436 65dcc7b6", "c8646ce8bfe33952d955543665dcc7b6"},
	} {
		packet := unhex(t, c.packet)
		n := len(packet) - 16
		tag, err := RetryTag(c.v, odcid, packet[:n])
		if err != nil || hex.EncodeToString(tag[:]) != c.tag {
			t.Errorf("%s: RetryTag = %x, %v, want %s", c.name, tag, err, c.tag)
		}
		if !VerifyRetry(c.v, odcid, packet) {
			t.Errorf("%s: VerifyRetry rejects the RFC's packet", c.name)
		}
		if VerifyRetry(c.other, odcid, packet) {
			t.Errorf("%s: VerifyRetry accepts the packet under version %x", c.name, c.other)
		}
	}
}
