// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package quic

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"github.com/wirebatch/wirebatch/internal/benchshape"
)

// Benchmarks of whole batches against the per-packet way a QUIC stack protects packets today (the
// oracle: crypto/cipher or x/crypto AEAD, then a crypto/aes or x/crypto chacha20 mask per packet),
// run alternately on the same packets in the same benchmark so that both meet the same load.
// Names parse as Benchmark{Seal,Open}/<suite>/<workload>/default for internal/benchtable: ns/pkt
// is this package's, baseline-ns/pkt the per-packet way's, vs-baseline their ratio.

var benchWorkloads = []struct {
	name    string
	n, size int
}{
	{"1200x64", 64, 1200}, // a GSO batch of full-size packets
	{"60x64", 64, 60},     // ACK-sized packets
	{"1200x1", 1, 1200},   // one packet
}

var suiteNames = map[Suite]string{AES128GCM: "QUIC-AES-128-GCM", AES256GCM: "QUIC-AES-256-GCM", ChaCha20Poly1305: "QUIC-ChaCha20-Poly1305"}

func BenchmarkSeal(b *testing.B) { benchQUIC(b, false) }
func BenchmarkOpen(b *testing.B) { benchQUIC(b, true) }

func benchQUIC(b *testing.B, open bool) {
	for _, s := range allSuites {
		k, err := NewKeys(Version1, s, make([]byte, 48))
		if err != nil {
			b.Fatal(err)
		}
		o := newOracle(b, k)
		for _, w := range benchWorkloads {
			b.Run(suiteNames[s]+"/"+w.name+"/default", func(b *testing.B) {
				benchPaired(b, k, o, w.n, w.size, open)
			})
		}
	}
}

// benchPaired times the package and the oracle on the same n packets of size bytes of payload
// (short header, 8-byte connection ID, 2-byte packet numbers), alternating in blocks of at least 64
// packets. Before each pass, untimed, the harness puts the input back in the shared buffers: the
// protected packets for Open (which decrypts in place), the unprotected headers for Seal (header
// protection rewrote their first byte, and with it the packet-number length). A whole batch copied
// back no longer fits in L1 and costs more a packet than one packet copied right before its Open,
// so timing the copy would charge the batch path for the harness rather than for its work.
func benchPaired(b *testing.B, k *Keys, o *oracle, n, size int, open bool) {
	rng := rand.New(rand.NewPCG(1, uint64(size)))
	const pnOff = 9
	const hdrLen = pnOff + 2 // 2-byte packet numbers
	plain := make([][]byte, n)
	for i := range plain {
		plain[i] = make([]byte, hdrLen+size, hdrLen+size+16)
		plain[i][0] = 0x41
		for j := 1; j < len(plain[i]); j++ {
			plain[i][j] = byte(rng.Uint32())
		}
	}
	protected := make([][]byte, n)
	for i := range protected {
		protected[i] = o.seal(append(make([]byte, 0, cap(plain[i])), plain[i]...), pnOff, uint64(1000+i))
	}
	work := make([][]byte, n)
	for i := range work {
		work[i] = make([]byte, len(protected[i]))
	}
	reset := func() {
		for i := range work {
			if open {
				copy(work[i], protected[i])
			} else {
				copy(work[i][:hdrLen], plain[i])
			}
		}
	}
	pkts := make([]Packet, n)
	ours := func() {
		// Field by field, as a stack refills its batch: a composite literal assigned to pkts[i] is
		// built on the stack and copied in 16-byte moves that each wait for the two 8-byte stores
		// they span (about 14 ns a packet on Zen 4), a cost of the harness, not of Seal or Open.
		for i := range pkts {
			p := &pkts[i]
			p.PNOffset = pnOff
			if open {
				p.Buf = work[i]
			} else {
				p.Buf, p.PN = work[i][:len(plain[i])], uint64(1000+i)
			}
		}
		if open {
			if k.Open(pkts, 999) != 0 {
				b.Fatal("Open failed")
			}
		} else {
			k.Seal(pkts)
		}
	}
	base := func() {
		for i := range work {
			if !open {
				o.seal(work[i][:len(plain[i])], pnOff, uint64(1000+i))
				continue
			}
			buf := work[i]
			m := o.mask(buf[pnOff+4 : pnOff+20])
			buf[0] ^= m[0] & 0x1f
			pnLen := int(buf[0]&3) + 1
			for j := range pnLen {
				buf[pnOff+j] ^= m[1+j]
			}
			pn := decodePN(999, uint64(binary.BigEndian.Uint16(buf[pnOff:])), pnLen)
			hdr := pnOff + pnLen
			// In place, as a stack decrypts (quic-go: opener.Open(data[hdrLen:hdrLen], data[hdrLen:], ...)).
			if _, err := o.aead.Open(buf[hdr:hdr], o.nonce(pn), buf[hdr:], buf[:hdr]); err != nil {
				b.Fatal(err)
			}
		}
	}
	benchshape.PairedReset(b, n, reset, ours, base)
}
