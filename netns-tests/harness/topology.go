// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package harness

import (
	"fmt"
	"sync/atomic"
	"testing"
)

// Veth is one end of a veth pair: its device name inside its namespace.
type Veth struct {
	NS  *Namespace
	Dev string
}

// NewVeth creates a veth pair with one end in a and the other in b, both
// named dev (names only need to be unique within a namespace). The pair is
// created directly inside the namespaces, so nothing is left in the host
// namespace if the test dies; deleting either namespace deletes the pair.
func NewVeth(t testing.TB, a, b *Namespace, dev string) (Veth, Veth) {
	t.Helper()
	if out, err := ip("link", "add", "name", dev, "netns", a.Name, "type", "veth", "peer", "name", dev, "netns", b.Name); err != nil {
		t.Fatalf("creating veth %s between %s and %s: %v\n%s", dev, a.Name, b.Name, err, out)
	}
	return Veth{NS: a, Dev: dev}, Veth{NS: b, Dev: dev}
}

// Host is a namespace with one address on a link.
type Host struct {
	*Namespace
	Dev  string
	Addr string // without prefix length, e.g. "10.201.3.1"
}

var subnetCounter atomic.Int64

// NewPair creates two namespaces joined by a veth pair and addressed in a
// /24 of 10.201.0.0/16 (distinct per pair within a test process; separate
// namespaces keep pairs of concurrent processes apart), links up.
func NewPair(t testing.TB) (Host, Host) {
	t.Helper()
	a, b := NewNamespace(t), NewNamespace(t)
	va, vb := NewVeth(t, a, b, "veth0")
	subnet := subnetCounter.Add(1) % 256
	ha := Host{Namespace: a, Dev: va.Dev, Addr: fmt.Sprintf("10.201.%d.1", subnet)}
	hb := Host{Namespace: b, Dev: vb.Dev, Addr: fmt.Sprintf("10.201.%d.2", subnet)}
	a.AddAddr(va.Dev, ha.Addr+"/24")
	b.AddAddr(vb.Dev, hb.Addr+"/24")
	return ha, hb
}
