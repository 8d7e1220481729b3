// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package kernels

import "testing"

// TestValidPrefixOverlaps places AD, Src and Dst at every offset and length in a small buffer (Dst
// of the length the op needs) and checks validPrefix's two-comparison overlap tests against
// checkOp's exact ones: an op that misuses overlap never passes, and one with non-empty slices
// that does not passes (so the fast path falls back to checkOp only for empty slices).
func TestValidPrefixOverlaps(t *testing.T) {
	key, err := NewKey(ChaCha20Poly1305, make([]byte, 32))
	if err != nil {
		t.Fatal(err)
	}
	nonce := make([]byte, 12)
	const size = 3*TagSize + 8
	buf := make([]byte, size)
	checked := 0
	for _, open := range []bool{false, true} {
		for srcOff := 0; srcOff <= size; srcOff++ {
			for srcLen := 0; srcOff+srcLen <= size; srcLen++ {
				dstLen := srcLen + TagSize
				if open {
					if dstLen = srcLen - TagSize; dstLen < 0 {
						continue
					}
				}
				for dstOff := 0; dstOff+dstLen <= size; dstOff++ {
					for _, ad := range [][2]int{{0, 0}, {0, 5}, {dstOff, 1}, {max(dstOff-3, 0), 3}, {dstOff + dstLen, 2}, {srcOff, srcLen}} {
						if ad[0]+ad[1] > size {
							continue
						}
						op := Op{Key: key, Nonce: nonce, AD: buf[ad[0] : ad[0]+ad[1]],
							Src: buf[srcOff : srcOff+srcLen], Dst: buf[dstOff : dstOff+dstLen]}
						misuse := inexactOverlap(op.Dst, op.Src) || anyOverlap(op.AD, op.Dst)
						passed, _ := validPrefix([]Op{op}, open)
						nonEmpty := len(op.AD) > 0 && len(op.Src) > 0 && len(op.Dst) > 0
						switch {
						case misuse && passed == 1:
							t.Fatalf("open %v: AD [%d:+%d] Src [%d:+%d] Dst [%d:+%d] overlap but pass validPrefix",
								open, ad[0], ad[1], srcOff, srcLen, dstOff, dstLen)
						case !misuse && nonEmpty && passed == 0:
							t.Fatalf("open %v: AD [%d:+%d] Src [%d:+%d] Dst [%d:+%d] are fine but fail validPrefix",
								open, ad[0], ad[1], srcOff, srcLen, dstOff, dstLen)
						}
						checked++
					}
				}
			}
		}
	}
	t.Logf("%d placements", checked)
}
