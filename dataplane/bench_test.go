// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package dataplane

import (
	"encoding/binary"
	"testing"
	"time"

	"golang.org/x/crypto/chacha20poly1305"

	"github.com/wirebatch/wirebatch/internal/benchshape"
	"github.com/wirebatch/wirebatch/kernels"
	"github.com/wirebatch/wirebatch/protocol"
)

// Stage benchmarks, per packet, beside the two costs they are judged against: the bare kernel call on
// the same batch (the stage's overhead is everything above it), and the per-packet x/crypto AEAD that
// wireguard-go's encryption and decryption workers run (one chacha20poly1305 Seal/Open per packet).
//
//	go test -run '^$' -bench 'Stage|Kernel|PerPacket' ./dataplane/

// workload is a batch shape: packet sizes and the MTU they are padded under.
type workload struct {
	name  string
	sizes []int
	mtu   int
}

// workloads are the shapes of `make bench` (internal/benchshape): a full batch of MTU-sized
// packets and the simple IMIX, IP packets of 64, 576 and 1500 bytes.
func workloads() []workload {
	return []workload{{"64x1420", benchshape.Repeat(1420, 64), 1420}, {"IMIX", benchshape.IMIX64(), 1500}}
}

func totalBytes(sizes []int) (n int64) {
	for _, s := range sizes {
		n += int64(s)
	}
	return n
}

// benchPair returns a session whose receiving side is already confirmed.
func benchPair(b *testing.B, mtu int) (a, c *end) {
	a, c = newPair(b, kernels.ChaCha20Poly1305)
	a.enc = NewEncrypter(a.set, mtu)
	c.enc = NewEncrypter(c.set, mtu)
	c.set.peers = map[*Peer]struct{}{c.peer: {}}
	if !c.peer.confirm(c.kp) {
		b.Fatal("confirm failed")
	}
	return a, c
}

// plaintexts returns a batch loaded with IPv4 packets of the workload's sizes and a copy of their
// first 20 bytes (the header the next iteration restores: encryption in place overwrites it).
func plaintexts(w workload) (Packets, [][20]byte) {
	p := newPackets(len(w.sizes))
	hdrs := make([][20]byte, len(w.sizes))
	for i, s := range w.sizes {
		pk := ipPacket(addrA4, addrB4, s, byte(i))
		p.Sizes[i] = copy(p.Bufs[i][p.Offset:], pk)
		copy(hdrs[i][:], pk)
	}
	return p, hdrs
}

func BenchmarkStageEncrypt(b *testing.B) {
	for _, w := range workloads() {
		b.Run(w.name, func(b *testing.B) {
			a, _ := benchPair(b, w.mtu)
			p, hdrs := plaintexts(w)
			b.SetBytes(totalBytes(w.sizes) / int64(len(w.sizes)))
			b.ReportAllocs()
			b.ResetTimer()
			for done := 0; done < b.N; done += len(w.sizes) {
				for i, s := range w.sizes {
					copy(p.Bufs[i][p.Offset:], hdrs[i][:])
					p.Sizes[i] = s
				}
				a.enc.Encrypt(p)
			}
			if p.Verdicts[0] != VerdictOK {
				b.Fatal(p.Verdicts[0])
			}
		})
	}
}

// BenchmarkKernelSeal is the bare kernels.Seal of the same batch the encrypt stage seals (the padded
// plaintexts, in place): the floor of BenchmarkStageEncrypt.
func BenchmarkKernelSeal(b *testing.B) {
	for _, w := range workloads() {
		b.Run(w.name, func(b *testing.B) {
			a, _ := benchPair(b, w.mtu)
			p, _ := plaintexts(w)
			ops := make([]kernels.Op, len(w.sizes))
			nonces := make([][12]byte, len(w.sizes))
			for i, s := range w.sizes {
				padded := paddedLen(s, w.mtu)
				ops[i] = kernels.Op{Key: a.kp.send, Nonce: nonces[i][:], Src: p.Bufs[i][p.Offset : p.Offset+padded], Dst: p.Bufs[i][p.Offset : p.Offset+padded+kernels.TagSize]}
			}
			b.SetBytes(totalBytes(w.sizes) / int64(len(w.sizes)))
			b.ReportAllocs()
			b.ResetTimer()
			for done := 0; done < b.N; done += len(w.sizes) {
				kernels.Seal(ops)
			}
		})
	}
}

// BenchmarkPerPacketSeal is wireguard-go's way: header, padding and one x/crypto Seal per packet.
func BenchmarkPerPacketSeal(b *testing.B) {
	for _, w := range workloads() {
		b.Run(w.name, func(b *testing.B) {
			aead, _ := chacha20poly1305.New(keyAB)
			p, _ := plaintexts(w)
			var nonce [12]byte
			b.SetBytes(totalBytes(w.sizes) / int64(len(w.sizes)))
			b.ReportAllocs()
			b.ResetTimer()
			ctr := uint64(0)
			for done := 0; done < b.N; done += len(w.sizes) {
				for i, s := range w.sizes {
					buf := p.Bufs[i]
					padded := paddedLen(s, w.mtu)
					clear(buf[p.Offset+s : p.Offset+padded])
					putHeader(buf[p.Offset-protocol.TransportHeaderSize:p.Offset], 2, ctr)
					binary.LittleEndian.PutUint64(nonce[4:], ctr)
					ctr++
					aead.Seal(buf[p.Offset:p.Offset], nonce[:], buf[p.Offset:p.Offset+padded], nil)
				}
			}
		})
	}
}

// sealedBatch returns the messages of one sealed batch of the workload, for the decrypt benchmarks.
func sealedBatch(b *testing.B, a *end, w workload) [][]byte {
	p, _ := plaintexts(w)
	a.enc.Encrypt(p)
	msgs := make([][]byte, len(w.sizes))
	for i := range msgs {
		if p.Verdicts[i] != VerdictOK {
			b.Fatal(p.Verdicts[i])
		}
		msgs[i] = append([]byte{}, p.Bufs[i][p.Offset-protocol.TransportHeaderSize:][:p.Sizes[i]]...)
	}
	return msgs
}

// BenchmarkStageDecrypt opens the same batch over and over: each iteration restores the messages
// (opening in place overwrites them) and resets the replay window, both included in the time.
func BenchmarkStageDecrypt(b *testing.B) {
	for _, w := range workloads() {
		b.Run(w.name, func(b *testing.B) {
			a, c := benchPair(b, w.mtu)
			msgs := sealedBatch(b, a, w)
			in := newPackets(len(msgs))
			b.SetBytes(totalBytes(w.sizes) / int64(len(w.sizes)))
			b.ReportAllocs()
			b.ResetTimer()
			for done := 0; done < b.N; done += len(w.sizes) {
				for i, m := range msgs {
					in.Sizes[i] = copy(in.Bufs[i][in.Offset:], m)
					in.Addrs[i] = endA
				}
				c.kp.replay.Reset()
				c.dec.Decrypt(in)
			}
			if in.Verdicts[0] != VerdictOK {
				b.Fatal(in.Verdicts[0])
			}
		})
	}
}

// BenchmarkPerPacketOpen is wireguard-go's way: one x/crypto Open per packet (same restore copies).
func BenchmarkPerPacketOpen(b *testing.B) {
	for _, w := range workloads() {
		b.Run(w.name, func(b *testing.B) {
			a, _ := benchPair(b, w.mtu)
			msgs := sealedBatch(b, a, w)
			aead, _ := chacha20poly1305.New(keyAB)
			in := newPackets(len(msgs))
			var nonce [12]byte
			b.SetBytes(totalBytes(w.sizes) / int64(len(w.sizes)))
			b.ReportAllocs()
			b.ResetTimer()
			for done := 0; done < b.N; done += len(w.sizes) {
				for i, m := range msgs {
					buf := in.Bufs[i][in.Offset:]
					n := copy(buf, m)
					copy(nonce[4:], m[protocol.TransportCounterOffset:protocol.TransportCounterOffset+8])
					if _, err := aead.Open(buf[protocol.TransportHeaderSize:protocol.TransportHeaderSize], nonce[:], buf[protocol.TransportHeaderSize:n], nil); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}

// BenchmarkStageOverKernel measures the encrypt stage against the bare kernels.Seal of the same batch
// in alternation, batch by batch, and reports the ratio of the fastest stage batch to the fastest
// kernel batch (stage/kernel; 1.15 is the "within 15%" target). Pairing the two and taking minima
// keeps the ratio meaningful on a machine shared with other work, where plain ns/op swings by 2x.
func BenchmarkStageOverKernel(b *testing.B) {
	for _, w := range workloads() {
		b.Run(w.name, func(b *testing.B) {
			a, _ := benchPair(b, w.mtu)
			p, hdrs := plaintexts(w)
			q, _ := plaintexts(w)
			ops := make([]kernels.Op, len(w.sizes))
			nonces := make([][12]byte, len(w.sizes))
			for i, s := range w.sizes {
				padded := paddedLen(s, w.mtu)
				ops[i] = kernels.Op{Key: a.kp.send, Nonce: nonces[i][:], Src: q.Bufs[i][q.Offset : q.Offset+padded], Dst: q.Bufs[i][q.Offset : q.Offset+padded+kernels.TagSize]}
			}
			stageMin, kernelMin := time.Duration(1<<62), time.Duration(1<<62)
			b.ReportAllocs()
			b.ResetTimer()
			for done := 0; done < b.N; done += len(w.sizes) {
				t0 := time.Now()
				for i, s := range w.sizes {
					copy(p.Bufs[i][p.Offset:], hdrs[i][:])
					p.Sizes[i] = s
				}
				a.enc.Encrypt(p)
				t1 := time.Now()
				kernels.Seal(ops)
				t2 := time.Now()
				stageMin, kernelMin = min(stageMin, t1.Sub(t0)), min(kernelMin, t2.Sub(t1))
			}
			n := float64(len(w.sizes))
			b.ReportMetric(float64(stageMin)/n, "stage-ns/pkt")
			b.ReportMetric(float64(kernelMin)/n, "kernel-ns/pkt")
			b.ReportMetric(float64(stageMin)/float64(kernelMin), "stage/kernel")
		})
	}
}
