package dataplane

import (
	"os"
	"testing"
)

// fileTUN is a TUN that exposes a file, as golang.zx2c4.com/wireguard/tun's devices do.
type fileTUN struct {
	TUN
	f *os.File
}

func (t fileTUN) File() *os.File { return t.f }

func TestTunPollerReadable(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	if newTunPoller(nopTUN{}) != nil {
		t.Fatal("a poller for a TUN without a file")
	}
	p := newTunPoller(fileTUN{f: r})
	if p.readable() {
		t.Fatal("readable with nothing written")
	}
	w.Write([]byte{1})
	if !p.readable() {
		t.Fatal("not readable with a byte waiting")
	}
	if a := testing.AllocsPerRun(100, func() { p.readable() }); a != 0 {
		t.Errorf("readable allocates %v times", a)
	}
	r.Close()
	if p.readable() {
		t.Error("readable after Close")
	}
}
