// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

//go:build cgo && amd64

// Package ipsecmb runs intel-ipsec-mb (libIPSec_MB, Debian package libipsec-mb-dev) beside package
// kernels: its tests check that both produce the same ciphertexts and tags and that each opens the
// other's, and its benchmarks measure both on the same batches in the same run. It is a module of its
// own, so that the library's cgo and C headers are needed only here (`make bench-ipsecmb`, and the
// interop test in `make test`).
//
// A Batch holds its packets in C memory, as a C data plane would, and hands intel-ipsec-mb the whole
// batch in one cgo call: one job per packet through the multi-buffer manager's submit and flush (the
// library's job API, which picks its AVX-512, AVX2 or SSE code for this CPU at init; see NewMgr), so
// that the figures are the library's, not cgo's.
package ipsecmb

/*
#cgo LDFLAGS: -lIPSec_MB
#include <intel-ipsec-mb.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

// One packet: in, its length; out receives the ciphertext or plaintext; tag the tag.
typedef struct {
	uint8_t *in, *out, *tag, *nonce;
	uint64_t len;
	const void *enc_keys; // ChaCha20: the 32-byte key; GCM: struct gcm_key_data
	int key_len;          // 32 (ChaCha20), 16 or 32 (AES-GCM)
} packet;

// run submits one job per packet and flushes the manager; it returns the number of jobs that did
// not complete. gcm selects AES-GCM, otherwise ChaCha20-Poly1305; decrypt computes the tag of the
// ciphertext into tag (the caller compares) and deciphers it.
static int run(IMB_MGR *m, packet *p, int n, int gcm, int decrypt) {
	int failed = 0;
	for (int i = 0; i < n; i++) {
		IMB_JOB *job = IMB_GET_NEXT_JOB(m);
		job->cipher_direction = decrypt ? IMB_DIR_DECRYPT : IMB_DIR_ENCRYPT;
		job->chain_order = decrypt ? IMB_ORDER_HASH_CIPHER : IMB_ORDER_CIPHER_HASH;
		job->src = p[i].in;
		job->dst = p[i].out;
		job->cipher_start_src_offset_in_bytes = 0;
		job->msg_len_to_cipher_in_bytes = p[i].len;
		job->hash_start_src_offset_in_bytes = 0;
		job->msg_len_to_hash_in_bytes = p[i].len;
		job->iv = p[i].nonce;
		job->iv_len_in_bytes = 12;
		job->auth_tag_output = p[i].tag;
		job->auth_tag_output_len_in_bytes = 16;
		job->enc_keys = p[i].enc_keys;
		job->dec_keys = p[i].enc_keys;
		job->key_len_in_bytes = p[i].key_len;
		if (gcm) {
			job->cipher_mode = IMB_CIPHER_GCM;
			job->hash_alg = IMB_AUTH_AES_GMAC;
			job->u.GCM.aad = NULL;
			job->u.GCM.aad_len_in_bytes = 0;
		} else {
			job->cipher_mode = IMB_CIPHER_CHACHA20_POLY1305;
			job->hash_alg = IMB_AUTH_CHACHA20_POLY1305;
			job->u.CHACHA20_POLY1305.aad = NULL;
			job->u.CHACHA20_POLY1305.aad_len_in_bytes = 0;
		}
		job = IMB_SUBMIT_JOB(m);
		while (job != NULL) {
			if (job->status != IMB_STATUS_COMPLETED) failed++;
			job = IMB_GET_COMPLETED_JOB(m);
		}
	}
	IMB_JOB *job;
	while ((job = IMB_FLUSH_JOB(m)) != NULL) {
		if (job->status != IMB_STATUS_COMPLETED) failed++;
	}
	return failed;
}

// new_mgr initialises a manager for the best code this CPU runs, or for the AVX2 code where that
// is AVX-512 and avx512 is 0.
static IMB_MGR *new_mgr(int avx512, int *arch) {
	IMB_MGR *m = alloc_mb_mgr(0);
	if (m == NULL) return NULL;
	IMB_ARCH a;
	init_mb_mgr_auto(m, &a);
	if (a == IMB_ARCH_AVX512 && !avx512) {
		init_mb_mgr_avx2(m);
		a = IMB_ARCH_AVX2;
	}
	*arch = (int)a;
	return m;
}

static void *gcm_keys(IMB_MGR *m, const uint8_t *key, int key_len) {
	void *k = NULL;
	if (posix_memalign(&k, 64, sizeof(struct gcm_key_data)) != 0) return NULL;
	if (key_len == 16) IMB_AES128_GCM_PRE(m, key, k);
	else IMB_AES256_GCM_PRE(m, key, k);
	return k;
}
*/
import "C"

import (
	"errors"
	"fmt"
	"unsafe"

	"golang.org/x/sys/cpu"
)

// Suite is an AEAD intel-ipsec-mb runs here: ChaCha20-Poly1305 (RFC 8439) or AES-GCM with a 16- or
// 32-byte key, 12-byte nonces and 16-byte tags, without AD (WireGuard's transport data has none).
type Suite int

const (
	ChaCha20Poly1305 Suite = iota
	AES128GCM
	AES256GCM
)

func (s Suite) keyLen() int {
	if s == AES128GCM {
		return 16
	}
	return 32
}

// Mgr is an intel-ipsec-mb multi-buffer manager. Not safe for concurrent use.
type Mgr struct {
	m    *C.IMB_MGR
	Arch string // the code the library chose for this CPU
}

// NewMgr allocates a manager initialised for the best code this CPU runs as Go sees it: where
// GODEBUG=cpu.avx512f=off hides AVX-512 from Go (and so from package kernels), the library runs its
// AVX2 code too, so that both sides of a comparison use the same instruction sets. Close frees it.
func NewMgr() (*Mgr, error) {
	var arch C.int
	avx512 := C.int(0)
	if cpu.X86.HasAVX512F {
		avx512 = 1
	}
	m := C.new_mgr(avx512, &arch)
	if m == nil {
		return nil, errors.New("ipsecmb: alloc_mb_mgr failed")
	}
	names := map[C.int]string{C.IMB_ARCH_SSE: "SSE", C.IMB_ARCH_AVX: "AVX", C.IMB_ARCH_AVX2: "AVX2",
		C.IMB_ARCH_AVX512: "AVX512", C.IMB_ARCH_NOAESNI: "no-AESNI"}
	return &Mgr{m: m, Arch: names[arch]}, nil
}

// Close frees the manager.
func (g *Mgr) Close() { C.free_mb_mgr(g.m) }

// Batch is a batch of packets in C memory, each with its own key, nonce, input, output and tag
// buffer, for Seal and Open through intel-ipsec-mb.
type Batch struct {
	g      *Mgr
	suite  Suite
	pkts   []C.packet // in C memory
	blocks []unsafe.Pointer
}

// NewBatch copies keys (one per packet, cycled), nonces and inputs into C memory. Free releases it.
func (g *Mgr) NewBatch(s Suite, keys, nonces, ins [][]byte) (*Batch, error) {
	b := &Batch{g: g, suite: s}
	alloc := func(src []byte, n int) *C.uint8_t {
		p := C.calloc(C.size_t(max(n, 1)), 1)
		b.blocks = append(b.blocks, p)
		if len(src) > 0 {
			C.memcpy(p, unsafe.Pointer(&src[0]), C.size_t(len(src)))
		}
		return (*C.uint8_t)(p)
	}
	ckeys := make([]unsafe.Pointer, len(keys))
	for i, k := range keys {
		if len(k) != s.keyLen() {
			b.Free()
			return nil, fmt.Errorf("ipsecmb: key %d has %d bytes, want %d", i, len(k), s.keyLen())
		}
		raw := unsafe.Pointer(alloc(k, len(k)))
		if s == ChaCha20Poly1305 {
			ckeys[i] = raw
			continue
		}
		exp := C.gcm_keys(g.m, (*C.uint8_t)(raw), C.int(len(k)))
		if exp == nil {
			b.Free()
			return nil, errors.New("ipsecmb: no memory for GCM keys")
		}
		b.blocks = append(b.blocks, exp)
		ckeys[i] = exp
	}
	arr := C.calloc(C.size_t(len(ins)), C.size_t(unsafe.Sizeof(C.packet{})))
	b.blocks = append(b.blocks, arr)
	b.pkts = unsafe.Slice((*C.packet)(arr), len(ins))
	for i, in := range ins {
		if len(nonces[i]) != 12 {
			b.Free()
			return nil, fmt.Errorf("ipsecmb: nonce %d has %d bytes, want 12", i, len(nonces[i]))
		}
		b.pkts[i] = C.packet{in: alloc(in, len(in)), out: alloc(nil, len(in)), tag: alloc(nil, 16),
			nonce: alloc(nonces[i], 12), len: C.uint64_t(len(in)), enc_keys: ckeys[i%len(keys)],
			key_len: C.int(len(keys[i%len(keys)]))}
	}
	return b, nil
}

// Free releases the batch's C memory.
func (b *Batch) Free() {
	for _, p := range b.blocks {
		C.free(p)
	}
	b.blocks, b.pkts = nil, nil
}

// Seal encrypts every packet's input into its output and writes its tag.
func (b *Batch) Seal() error { return b.run(false) }

// Open decrypts every packet's input into its output and writes the tag it computes over the input
// (compare it with Tag). The outputs are released whatever the tags: this is a benchmark harness.
func (b *Batch) Open() error { return b.run(true) }

func (b *Batch) run(decrypt bool) error {
	if len(b.pkts) == 0 {
		return nil
	}
	gcm, dec := C.int(0), C.int(0)
	if b.suite != ChaCha20Poly1305 {
		gcm = 1
	}
	if decrypt {
		dec = 1
	}
	if n := C.run(b.g.m, &b.pkts[0], C.int(len(b.pkts)), gcm, dec); n != 0 {
		return fmt.Errorf("ipsecmb: %d of %d jobs failed (imb_get_errno %d)", n, len(b.pkts), C.imb_get_errno(b.g.m))
	}
	return nil
}

// Output returns a copy of packet i's output.
func (b *Batch) Output(i int) []byte {
	return C.GoBytes(unsafe.Pointer(b.pkts[i].out), C.int(b.pkts[i].len))
}

// Tag returns a copy of packet i's tag.
func (b *Batch) Tag(i int) []byte { return C.GoBytes(unsafe.Pointer(b.pkts[i].tag), 16) }
