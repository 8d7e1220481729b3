// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package harness

import (
	"context"
	"fmt"
	"net"
	"os"
	"strings"
	"testing"
	"time"
)

func TestMain(m *testing.M) { Main(m) }

// recordingTB records Skipf and Fatalf instead of acting on them.
type recordingTB struct {
	testing.TB
	skipped, failed string
}

func (r *recordingTB) Helper()                           {}
func (r *recordingTB) Skipf(format string, args ...any)  { r.skipped = fmt.Sprintf(format, args...) }
func (r *recordingTB) Fatalf(format string, args ...any) { r.failed = fmt.Sprintf(format, args...) }

func TestSkipOrFail(t *testing.T) {
	t.Setenv(RequireEnv, "")
	var r recordingTB
	skipOrFail(&r, "no %s", "root")
	if r.failed != "" || !strings.Contains(r.skipped, "no root") || !strings.Contains(r.skipped, RequireEnv) {
		t.Errorf("without %s: skipped %q, failed %q; want a skip naming the variable", RequireEnv, r.skipped, r.failed)
	}
	t.Setenv(RequireEnv, "require")
	r = recordingTB{}
	skipOrFail(&r, "no %s", "root")
	if r.skipped != "" || !strings.Contains(r.failed, "no root") {
		t.Errorf("with %s=require: skipped %q, failed %q; want a failure", RequireEnv, r.skipped, r.failed)
	}
}

func namespaceExists(t *testing.T, name string) bool {
	t.Helper()
	out, err := ip("netns", "list")
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(out) {
		if n, _, _ := strings.Cut(strings.TrimSpace(line), " "); n == name {
			return true
		}
	}
	return false
}

func TestPairPingsAndIsRemoved(t *testing.T) {
	Require(t)
	var names []string
	t.Run("pair", func(t *testing.T) {
		a, b := NewPair(t)
		names = []string{a.Name, b.Name}
		// A UDP datagram from a's address reaches a socket in b.
		var server *net.UDPConn
		if err := b.Do(func() (err error) {
			server, err = net.ListenUDP("udp", &net.UDPAddr{IP: net.ParseIP(b.Addr)})
			return err
		}); err != nil {
			t.Fatal(err)
		}
		defer server.Close()
		var client *net.UDPConn
		if err := a.Do(func() (err error) {
			client, err = net.DialUDP("udp", nil, server.LocalAddr().(*net.UDPAddr))
			return err
		}); err != nil {
			t.Fatal(err)
		}
		defer client.Close()
		if _, err := client.Write([]byte("hello")); err != nil {
			t.Fatal(err)
		}
		server.SetReadDeadline(time.Now().Add(5 * time.Second))
		buf := make([]byte, 16)
		n, from, err := server.ReadFromUDP(buf)
		if err != nil || string(buf[:n]) != "hello" || from.IP.String() != a.Addr {
			t.Errorf("read %q from %v (%v), want hello from %s", buf[:n], from, err, a.Addr)
		}
		// Commands run inside the namespace: b sees its own address.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if out := b.Run(ctx, "ip", "-brief", "addr", "show", "dev", b.Dev); !strings.Contains(out, b.Addr+"/24") {
			t.Errorf("ip addr inside %s: %q lacks %s", b.Name, out, b.Addr)
		}
		p := b.Start("sleep", "60")
		if err := p.Stop(time.Second); err == nil {
			t.Error("sleep interrupted by SIGINT exited cleanly")
		}
		echo := a.Start("sh", "-c", "echo out; echo err >&2")
		if err := echo.Wait(5 * time.Second); err != nil || echo.Stdout() != "out\n" || echo.Stderr() != "err\n" {
			t.Errorf("background sh: %v, stdout %q, stderr %q", err, echo.Stdout(), echo.Stderr())
		}
	})
	for _, name := range names {
		if namespaceExists(t, name) {
			t.Errorf("namespace %s still exists after its test", name)
		}
	}
}

func TestRemoveStale(t *testing.T) {
	Require(t)
	// A pid that can not exist (above the kernel's PID_MAX_LIMIT).
	stale := Prefix + "999999999-1"
	if out, err := ip("netns", "add", stale); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	live := NewNamespace(t)
	RemoveStale(t)
	if namespaceExists(t, stale) {
		ip("netns", "del", stale)
		t.Errorf("stale namespace %s was not removed", stale)
	}
	if !namespaceExists(t, live.Name) {
		t.Errorf("namespace %s of this live process was removed", live.Name)
	}
}

func TestBuildOnce(t *testing.T) {
	Require(t) // building is slow; only the netns suites need it
	first := Build(t, "github.com/wirebatch/wirebatch/loadgen")
	info, err := os.Stat(first)
	if err != nil {
		t.Fatal(err)
	}
	if second := Build(t, "github.com/wirebatch/wirebatch/loadgen"); second != first {
		t.Errorf("second build at %s, want the cached %s", second, first)
	}
	if again, err := os.Stat(first); err != nil || !again.ModTime().Equal(info.ModTime()) {
		t.Errorf("binary rebuilt or gone: %v", err)
	}
}
