// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package kernels_test

// Known-answer AEAD vectors, transcribed from their publications, run on every tier both one op at a
// time and all together in one mixed batch. Each vector is also checked against the oracle
// (crypto/cipher, x/crypto), so a transcription error shows up as a table bug, not a kernel bug.

import (
	"bytes"
	"testing"

	"github.com/wirebatch/wirebatch/kernels"
)

type aeadVector struct {
	source                 string
	suite                  kernels.Suite
	key, nonce, ad, pt, ct string // hex; ct excludes the tag
	tag                    string
}

// The RFC 8439 sample plaintext of sections 2.4.2 and 2.8.2 (and draft-irtf-cfrg-xchacha A.3.1).
const sunscreen = "Ladies and Gentlemen of the class of '99: If I could offer you only one tip for the future, sunscreen would be it."

// The plaintext of the GCM spec's test cases 3/4, 9/10 and 15/16 (4 and its siblings take 60 bytes).
const gcmP = "d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a72" +
	"1c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b391aafd255"

const gcmA = "feedfacedeadbeeffeedfacedeadbeefabaddad2"

var aeadVectors = []aeadVector{
	{
		source: "RFC 8439 section 2.8.2 (AEAD_CHACHA20_POLY1305 example)",
		suite:  kernels.ChaCha20Poly1305,
		key:    "808182838485868788898a8b8c8d8e8f909192939495969798999a9b9c9d9e9f",
		nonce:  "070000004041424344454647",
		ad:     "50515253c0c1c2c3c4c5c6c7",
		pt:     hexOf(sunscreen),
		ct: "d31a8d34648e60db7b86afbc53ef7ec2a4aded51296e08fea9e2b5a736ee62d6" +
			"3dbea45e8ca9671282fafb69da92728b1a71de0a9e060b2905d6a5b67ecd3b36" +
			"92ddbd7f2d778b8c9803aee328091b58fab324e4fad675945585808b4831d7bc" +
			"3ff4def08e4b7a9de576d26586cec64b6116",
		tag: "1ae10b594f09e26a7e902ecbd0600691",
	},
	{
		source: "RFC 8439 appendix A.5 (ChaCha20-Poly1305 AEAD decryption)",
		suite:  kernels.ChaCha20Poly1305,
		key:    "1c9240a5eb55d38af333888604f6b5f0473917c1402b80099dca5cbc207075c0",
		nonce:  "000000000102030405060708",
		ad:     "f33388860000000000004e91",
		// "Internet-Drafts are draft documents ... as /“work in progress./”" with UTF-8 quotes.
		pt: "496e7465726e65742d4472616674732061726520647261667420646f63756d65" +
			"6e74732076616c696420666f722061206d6178696d756d206f6620736978206d" +
			"6f6e74687320616e64206d617920626520757064617465642c207265706c6163" +
			"65642c206f72206f62736f6c65746564206279206f7468657220646f63756d65" +
			"6e747320617420616e792074696d652e20497420697320696e617070726f7072" +
			"6961746520746f2075736520496e7465726e65742d4472616674732061732072" +
			"65666572656e6365206d6174657269616c206f7220746f206369746520746865" +
			"6d206f74686572207468616e206173202fe2809c776f726b20696e2070726f67" +
			"726573732e2fe2809d",
		ct: "64a0861575861af460f062c79be643bd5e805cfd345cf389f108670ac76c8cb2" +
			"4c6cfc18755d43eea09ee94e382d26b0bdb7b73c321b0100d4f03b7f355894cf" +
			"332f830e710b97ce98c8a84abd0b948114ad176e008d33bd60f982b1ff37c855" +
			"9797a06ef4f0ef61c186324e2b3506383606907b6a7c02b0f9f6157b53c867e4" +
			"b9166c767b804d46a59b5216cde7a4e99040c5a40433225ee282a1b0a06c523e" +
			"af4534d7f83fa1155b0047718cbc546a0d072b04b3564eea1b422273f548271a" +
			"0bb2316053fa76991955ebd63159434ecebb4e466dae5a1073a6727627097a10" +
			"49e617d91d361094fa68f0ff77987130305beaba2eda04df997b714d6c6f2c29" +
			"a6ad5cb4022b02709b",
		tag: "eead9d67890cbb22392336fea1851f38",
	},
	{
		source: "draft-irtf-cfrg-xchacha-03 appendix A.3.1 (AEAD_XChaCha20_Poly1305 example)",
		suite:  kernels.XChaCha20Poly1305,
		key:    "808182838485868788898a8b8c8d8e8f909192939495969798999a9b9c9d9e9f",
		nonce:  "404142434445464748494a4b4c4d4e4f5051525354555657",
		ad:     "50515253c0c1c2c3c4c5c6c7",
		pt:     hexOf(sunscreen),
		ct: "bd6d179d3e83d43b9576579493c0e939572a1700252bfaccbed2902c21396cbb" +
			"731c7f1b0b4aa6440bf3a82f4eda7e39ae64c6708c54c216cb96b72e1213b452" +
			"2f8c9ba40db5d945b11b69b982c1bb9e3f3fac2bc369488f76b2383565d3fff9" +
			"21f9664c97637da9768812f615c68b13b52e",
		tag: "c0875924c1c7987947deafd8780acf49",
	},

	// McGrew and Viega, "The Galois/Counter Mode of Operation (GCM)", appendix B, the test cases with
	// 96-bit IVs (the ones NIST SP 800-38D's validation also uses).
	{source: "GCM spec test case 1", suite: kernels.AES128GCM,
		key: "00000000000000000000000000000000", nonce: "000000000000000000000000",
		tag: "58e2fccefa7e3061367f1d57a4e7455a"},
	{source: "GCM spec test case 2", suite: kernels.AES128GCM,
		key: "00000000000000000000000000000000", nonce: "000000000000000000000000",
		pt: "00000000000000000000000000000000", ct: "0388dace60b6a392f328c2b971b2fe78",
		tag: "ab6e47d42cec13bdf53a67b21257bddf"},
	{source: "GCM spec test case 3", suite: kernels.AES128GCM,
		key: "feffe9928665731c6d6a8f9467308308", nonce: "cafebabefacedbaddecaf888", pt: gcmP,
		ct: "42831ec2217774244b7221b784d0d49ce3aa212f2c02a4e035c17e2329aca12e" +
			"21d514b25466931c7d8f6a5aac84aa051ba30b396a0aac973d58e091473f5985",
		tag: "4d5c2af327cd64a62cf35abd2ba6fab4"},
	{source: "GCM spec test case 4", suite: kernels.AES128GCM,
		key: "feffe9928665731c6d6a8f9467308308", nonce: "cafebabefacedbaddecaf888", ad: gcmA, pt: gcmP[:120],
		ct: "42831ec2217774244b7221b784d0d49ce3aa212f2c02a4e035c17e2329aca12e" +
			"21d514b25466931c7d8f6a5aac84aa051ba30b396a0aac973d58e091",
		tag: "5bc94fbc3221a5db94fae95ae7121a47"},
	{source: "GCM spec test case 7", suite: kernels.AES192GCM,
		key: "000000000000000000000000000000000000000000000000", nonce: "000000000000000000000000",
		tag: "cd33b28ac773f74ba00ed1f312572435"},
	{source: "GCM spec test case 8", suite: kernels.AES192GCM,
		key: "000000000000000000000000000000000000000000000000", nonce: "000000000000000000000000",
		pt: "00000000000000000000000000000000", ct: "98e7247c07f0fe411c267e4384b0f600",
		tag: "2ff58d80033927ab8ef4d4587514f0fb"},
	{source: "GCM spec test case 9", suite: kernels.AES192GCM,
		key: "feffe9928665731c6d6a8f9467308308feffe9928665731c", nonce: "cafebabefacedbaddecaf888", pt: gcmP,
		ct: "3980ca0b3c00e841eb06fac4872a2757859e1ceaa6efd984628593b40ca1e19c" +
			"7d773d00c144c525ac619d18c84a3f4718e2448b2fe324d9ccda2710acade256",
		tag: "9924a7c8587336bfb118024db8674a14"},
	{source: "GCM spec test case 10", suite: kernels.AES192GCM,
		key: "feffe9928665731c6d6a8f9467308308feffe9928665731c", nonce: "cafebabefacedbaddecaf888", ad: gcmA, pt: gcmP[:120],
		ct: "3980ca0b3c00e841eb06fac4872a2757859e1ceaa6efd984628593b40ca1e19c" +
			"7d773d00c144c525ac619d18c84a3f4718e2448b2fe324d9ccda2710",
		tag: "2519498e80f1478f37ba55bd6d27618c"},
	{source: "GCM spec test case 13", suite: kernels.AES256GCM,
		key: "0000000000000000000000000000000000000000000000000000000000000000", nonce: "000000000000000000000000",
		tag: "530f8afbc74536b9a963b4f1c4cb738b"},
	{source: "GCM spec test case 14", suite: kernels.AES256GCM,
		key: "0000000000000000000000000000000000000000000000000000000000000000", nonce: "000000000000000000000000",
		pt: "00000000000000000000000000000000", ct: "cea7403d4d606b6e074ec5d3baf39d18",
		tag: "d0d1c8a799996bf0265b98b5d48ab919"},
	{source: "GCM spec test case 15", suite: kernels.AES256GCM,
		key: "feffe9928665731c6d6a8f9467308308feffe9928665731c6d6a8f9467308308", nonce: "cafebabefacedbaddecaf888", pt: gcmP,
		ct: "522dc1f099567d07f47f37a32a84427d643a8cdcbfe5c0c97598a2bd2555d1aa" +
			"8cb08e48590dbb3da7b08b1056828838c5f61e6393ba7a0abcc9f662898015ad",
		tag: "b094dac5d93471bdec1a502270e3cc6c"},
	{source: "GCM spec test case 16", suite: kernels.AES256GCM,
		key: "feffe9928665731c6d6a8f9467308308feffe9928665731c6d6a8f9467308308", nonce: "cafebabefacedbaddecaf888", ad: gcmA, pt: gcmP[:120],
		ct: "522dc1f099567d07f47f37a32a84427d643a8cdcbfe5c0c97598a2bd2555d1aa" +
			"8cb08e48590dbb3da7b08b1056828838c5f61e6393ba7a0abcc9f662",
		tag: "76fc6ece0f4e1768cddf8853bb2d551b"},
}

func hexOf(s string) string {
	const digits = "0123456789abcdef"
	b := make([]byte, 0, 2*len(s))
	for i := range len(s) {
		b = append(b, digits[s[i]>>4], digits[s[i]&15])
	}
	return string(b)
}

// TestVectorsAgreeWithOracle checks the table itself: a vector the oracle disagrees with is a
// transcription error.
func TestVectorsAgreeWithOracle(t *testing.T) {
	for _, v := range aeadVectors {
		key, nonce, ad, pt := mustHex(v.key), mustHex(v.nonce), mustHex(v.ad), mustHex(v.pt)
		want := append(mustHex(v.ct), mustHex(v.tag)...)
		if got := oracleAEAD(t, v.suite, key).Seal(nil, nonce, pt, ad); !bytes.Equal(got, want) {
			t.Errorf("%s: the oracle computes %x, the table says %x", v.source, got, want)
		}
	}
}

func TestVectors(t *testing.T) {
	for _, tier := range kernels.Tiers() {
		t.Run(tier.String(), func(t *testing.T) {
			// One op per call, then every vector in one batch twice over (so that lanes hold
			// different suites and the same key in several lanes).
			for _, v := range aeadVectors {
				checkVectors(t, tier, []aeadVector{v})
			}
			all := append(append([]aeadVector(nil), aeadVectors...), aeadVectors...)
			checkVectors(t, tier, all)
		})
	}
}

func checkVectors(t *testing.T, tier kernels.Tier, vs []aeadVector) {
	t.Helper()
	seal := make([]kernels.Op, len(vs))
	open := make([]kernels.Op, len(vs))
	for i, v := range vs {
		k, err := kernels.NewKey(v.suite, mustHex(v.key))
		if err != nil {
			t.Fatalf("%s: %v", v.source, err)
		}
		pt := mustHex(v.pt)
		ctag := append(mustHex(v.ct), mustHex(v.tag)...)
		seal[i] = kernels.Op{Key: k, Nonce: mustHex(v.nonce), AD: mustHex(v.ad), Src: pt, Dst: make([]byte, len(pt)+kernels.TagSize)}
		open[i] = kernels.Op{Key: k, Nonce: mustHex(v.nonce), AD: mustHex(v.ad), Src: ctag, Dst: make([]byte, len(pt)), Err: errSentinel}
	}
	tier.Seal(seal)
	if failed := tier.Open(open); failed != 0 {
		t.Errorf("%v: Open of %d known-answer vectors: %d failed", tier, len(vs), failed)
	}
	for i, v := range vs {
		want := mustHex(v.ct + v.tag)
		if !bytes.Equal(seal[i].Dst, want) {
			t.Errorf("%v %s: Seal = %x, want %x", tier, v.source, seal[i].Dst, want)
		}
		if open[i].Err != nil || !bytes.Equal(open[i].Dst, mustHex(v.pt)) {
			t.Errorf("%v %s: Open = %x, %v; want the plaintext", tier, v.source, open[i].Dst, open[i].Err)
		}
	}
}
