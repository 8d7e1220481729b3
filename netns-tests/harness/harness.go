// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

// Package harness runs end-to-end tests across Linux network namespaces:
// it creates namespaces and veth links with unique names (removing them when
// the test ends, and removing leftovers of crashed runs), assigns addresses,
// runs commands inside namespaces with their output attached to the test on
// failure, and builds the repository's binaries once per test process.
//
// Everything needs root (CAP_SYS_ADMIN and CAP_NET_ADMIN) and iproute2's
// ip command. RequireRoot skips a test without them, or fails it when the
// environment variable WIREBATCH_NETNS is "require" (as CI sets it), so a
// misconfigured runner can not pass by skipping.
//
// Names: namespaces are Prefix + "<pid>-<n>", so a later run can tell its
// own leftovers (pid no longer alive) from namespaces of concurrent runs.
package harness

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Prefix starts the name of every namespace the harness creates.
const Prefix = "wbt-"

// RequireEnv is the environment variable that turns skips into failures
// when set to "require".
const RequireEnv = "WIREBATCH_NETNS"

// skipOrFail skips t, or fails it when RequireEnv demands netns tests.
func skipOrFail(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if os.Getenv(RequireEnv) == "require" {
		t.Fatalf("%s (%s=require)", msg, RequireEnv)
		return
	}
	t.Skipf("%s; set %s=require to fail instead of skipping", msg, RequireEnv)
}

// RequireRoot skips t unless it runs as root, or fails it when
// WIREBATCH_NETNS=require.
func RequireRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		skipOrFail(t, "network namespace tests need root")
	}
}

// RequireIP skips (or fails, see RequireRoot) t when iproute2's ip command
// is missing, and returns its path.
func RequireIP(t testing.TB) string {
	t.Helper()
	return RequireCommand(t, "ip", "iproute2")
}

// RequireCommand skips (or fails, see RequireRoot) t when the command name
// is not on PATH, naming the Debian package pkg that provides it, and
// returns its path.
func RequireCommand(t testing.TB, name, pkg string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		skipOrFail(t, "this test needs the %s command (%s): %v", name, pkg, err)
	}
	return path
}

// Require is RequireRoot and RequireIP together.
func Require(t testing.TB) {
	t.Helper()
	RequireRoot(t)
	RequireIP(t)
}

// Namespace is a network namespace created for one test.
type Namespace struct {
	Name string
	t    testing.TB
}

var (
	nameCounter atomic.Int64
	staleOnce   sync.Once
)

// NewNamespace creates a namespace with a unique name and its loopback up,
// and deletes it (with every link inside) when t ends. The first call also
// deletes namespaces left by earlier test processes that died.
func NewNamespace(t testing.TB) *Namespace {
	t.Helper()
	Require(t)
	staleOnce.Do(func() { RemoveStale(t) })
	ns := &Namespace{Name: fmt.Sprintf("%s%d-%d", Prefix, os.Getpid(), nameCounter.Add(1)), t: t}
	if out, err := ip("netns", "add", ns.Name); err != nil {
		skipOrFail(t, "creating a network namespace: %v: %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := ip("netns", "del", ns.Name); err != nil {
			t.Errorf("deleting namespace %s: %v: %s", ns.Name, err, out)
		}
	})
	ns.IP("link", "set", "lo", "up")
	return ns
}

// RemoveStale deletes namespaces named with Prefix whose creating process
// is gone, left behind by test runs that crashed or were killed.
func RemoveStale(t testing.TB) {
	t.Helper()
	out, err := ip("netns", "list")
	if err != nil {
		t.Logf("listing namespaces: %v: %s", err, out)
		return
	}
	for line := range strings.Lines(out) {
		// Lines look like "wbt-123-4 (id: 7)".
		name, _, _ := strings.Cut(strings.TrimSpace(line), " ")
		if !strings.HasPrefix(name, Prefix) {
			continue
		}
		pidText, _, _ := strings.Cut(strings.TrimPrefix(name, Prefix), "-")
		pid, err := strconv.Atoi(pidText)
		if err != nil || processAlive(pid) {
			continue
		}
		if out, err := ip("netns", "del", name); err != nil {
			t.Logf("deleting stale namespace %s: %v: %s", name, err, out)
		} else {
			t.Logf("deleted stale namespace %s", name)
		}
	}
}

func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// ip runs the ip command in the current namespace.
func ip(args ...string) (string, error) {
	out, err := exec.Command("ip", args...).CombinedOutput()
	return string(out), err
}

// IP runs "ip ARGS..." inside the namespace and fails the test on error.
func (ns *Namespace) IP(args ...string) string {
	ns.t.Helper()
	out, err := ip(append([]string{"-n", ns.Name}, args...)...)
	if err != nil {
		ns.t.Fatalf("ip -n %s %s: %v\n%s", ns.Name, strings.Join(args, " "), err, out)
	}
	return out
}

// AddAddr assigns cidr (e.g. "10.201.0.1/24") to dev and brings dev up.
func (ns *Namespace) AddAddr(dev, cidr string) {
	ns.t.Helper()
	ns.IP("addr", "add", cidr, "dev", dev)
	ns.IP("link", "set", dev, "up")
}

// Do runs f on an OS thread switched into the namespace, so sockets f
// opens belong to it (and stay there when used from other threads later).
// The thread is switched back afterwards; if that fails, the thread is
// retired rather than returned to the Go scheduler in the wrong namespace.
func (ns *Namespace) Do(f func() error) error {
	runtime.LockOSThread()
	home, err := os.Open("/proc/thread-self/ns/net")
	if err != nil {
		runtime.UnlockOSThread()
		return err
	}
	defer home.Close()
	target, err := os.Open("/var/run/netns/" + ns.Name)
	if err != nil {
		runtime.UnlockOSThread()
		return err
	}
	defer target.Close()
	if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("entering namespace %s: %w", ns.Name, err)
	}
	ferr := f()
	if err := unix.Setns(int(home.Fd()), unix.CLONE_NEWNET); err != nil {
		// Still locked: the thread exits with its goroutine.
		return errors.Join(ferr, fmt.Errorf("leaving namespace %s: %w", ns.Name, err))
	}
	runtime.UnlockOSThread()
	return ferr
}

// Command returns a command that runs name with args inside the namespace
// ("ip netns exec", which execs it, so the process is the command itself).
func (ns *Namespace) Command(ctx context.Context, name string, args ...string) *exec.Cmd {
	return exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", ns.Name, name}, args...)...)
}

// Run runs name with args inside the namespace to completion and returns
// its standard output. Its output is logged if the test fails; a non-zero
// exit fails the test at once.
func (ns *Namespace) Run(ctx context.Context, name string, args ...string) string {
	ns.t.Helper()
	cmd := ns.Command(ctx, name, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	label := fmt.Sprintf("[%s] %s %s", ns.Name, name, strings.Join(args, " "))
	ns.t.Cleanup(func() {
		if ns.t.Failed() {
			ns.t.Logf("%s\nstdout:\n%s\nstderr:\n%s", label, stdout.String(), stderr.String())
		}
	})
	if err != nil {
		ns.t.Fatalf("%s: %v", label, err)
	}
	return stdout.String()
}

// Process is a command running in the background inside a namespace.
type Process struct {
	Cmd    *exec.Cmd
	label  string
	stdout syncBuffer
	stderr syncBuffer
	done   chan struct{}
	err    error
}

// Start starts name with args inside the namespace in the background. When
// the test ends the process is interrupted (then killed after 5s) and, if
// the test failed, its output is logged.
func (ns *Namespace) Start(name string, args ...string) *Process {
	ns.t.Helper()
	p := &Process{label: fmt.Sprintf("[%s] %s %s", ns.Name, name, strings.Join(args, " ")), done: make(chan struct{})}
	p.Cmd = ns.Command(context.Background(), name, args...)
	p.Cmd.Stdout, p.Cmd.Stderr = &p.stdout, &p.stderr
	if err := p.Cmd.Start(); err != nil {
		ns.t.Fatalf("%s: %v", p.label, err)
	}
	go func() {
		p.err = p.Cmd.Wait()
		close(p.done)
	}()
	ns.t.Cleanup(func() {
		p.Stop(5 * time.Second)
		if ns.t.Failed() {
			ns.t.Logf("%s (exit: %v)\nstdout:\n%s\nstderr:\n%s", p.label, p.err, p.stdout.String(), p.stderr.String())
		}
	})
	return p
}

// Stop interrupts the process, kills it if it has not exited after grace,
// and returns its exit error (nil for a clean exit on the interrupt).
func (p *Process) Stop(grace time.Duration) error {
	select {
	case <-p.done:
		return p.err
	default:
	}
	p.Cmd.Process.Signal(os.Interrupt)
	select {
	case <-p.done:
	case <-time.After(grace):
		p.Cmd.Process.Kill()
		<-p.done
	}
	return p.err
}

// Wait waits for the process to exit, at most timeout, and returns its
// exit error.
func (p *Process) Wait(timeout time.Duration) error {
	select {
	case <-p.done:
		return p.err
	case <-time.After(timeout):
		return fmt.Errorf("%s: still running after %v", p.label, timeout)
	}
}

// Stdout and Stderr return what the process has written so far.
func (p *Process) Stdout() string { return p.stdout.String() }
func (p *Process) Stderr() string { return p.stderr.String() }

// syncBuffer is a bytes.Buffer safe for the process's writer goroutine and
// a reading test.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
