// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package main

// The userspace implementation for wg-quick: `tunnel [-f|--foreground] INTERFACE` creates the TUN
// interface, serves WireGuard's cross-platform configuration protocol (UAPI, get=1/set=1) on
// /var/run/wireguard/INTERFACE.sock, and leaves addresses, routes, keys and peers to wg-quick and
// wg, as wireguard-go does.
//
// Without -f the command returns only once the daemon serves the socket: wg-quick runs it and then,
// at once, `wg setconf`, which must find the socket. The parent creates the interface and the
// socket, so that it can report any failure itself, and re-executes the binary with both
// descriptors and a readiness pipe inherited (named in inheritedFDsEnv). The child starts a new
// session, away from the caller's terminal, and writes one line on the pipe: readyLine once it
// serves, or why it cannot; the parent relays that and exits.

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
	"golang.zx2c4.com/wireguard/conn"
	"golang.zx2c4.com/wireguard/ipc"
	"golang.zx2c4.com/wireguard/tun"

	"github.com/wirebatch/wirebatch/device"
	"github.com/wirebatch/wirebatch/examples/tunnel/wgquick"
)

const (
	// inheritedFDsEnv tells the re-executed daemon which descriptors it inherited: "TUN,UAPI,READY".
	inheritedFDsEnv = "TUNNEL_INHERITED_FDS"
	// logFileEnv names a file the background daemon appends its log to; without it the log is
	// discarded, so that the daemon holds none of its caller's descriptors open.
	logFileEnv = "TUNNEL_LOG"
	// logLevelEnv is wireguard-go's variable of the same name: verbose (or debug), error (the
	// default) or silent.
	logLevelEnv = "LOG_LEVEL"
	// foregroundEnv is wireguard-go's variable that, set to 1, asks for -f: what a supervisor that
	// keeps the process itself (systemd, runit) sets.
	foregroundEnv = "WG_PROCESS_FOREGROUND"
	// tunFDEnv and uapiFDEnv are wireguard-go's variables that hand the daemon, by descriptor
	// number, an open TUN and a listening UAPI socket its launcher made (a privileged launcher of an
	// unprivileged daemon), for it to serve instead of creating its own.
	tunFDEnv  = "WG_TUN_FD"
	uapiFDEnv = "WG_UAPI_FD"
	// readyLine is what the daemon writes on the readiness pipe once it serves the socket.
	readyLine = "ready"
)

// daemonArgs recognises the daemon's command line, [-f|--foreground] INTERFACE.
func daemonArgs(args []string) (iface string, foreground, ok bool) {
	switch {
	case len(args) == 1 && !strings.HasPrefix(args[0], "-"):
		return args[0], false, true
	case len(args) == 2 && (args[0] == "-f" || args[0] == "--foreground") && !strings.HasPrefix(args[1], "-"):
		return args[1], true, true
	}
	return "", false, false
}

// validInterfaceName reports whether name can name a Linux interface (at most IFNAMSIZ-1 bytes) and,
// since it becomes part of the socket's path, a file in /var/run/wireguard and nothing else. The
// characters are wg-quick's.
func validInterfaceName(name string) bool {
	if len(name) == 0 || len(name) > unix.IFNAMSIZ-1 || name == "." || name == ".." {
		return false
	}
	for _, c := range name {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.ContainsRune("_=+.-", c)) {
			return false
		}
	}
	return true
}

// daemon runs `tunnel [-f|--foreground] INTERFACE` and returns the exit status; foregroundEnv=1
// stands for -f, and tunFDEnv and uapiFDEnv name a TUN and a UAPI socket to serve instead of new
// ones.
func daemon(iface string, foreground bool, stderr io.Writer) int {
	if !validInterfaceName(iface) {
		fmt.Fprintf(stderr, "tunnel: %q is not an interface name (1 to 15 of a-z A-Z 0-9 _ = + . -)\n", iface)
		return 2
	}
	if fds, ok := os.LookupEnv(inheritedFDsEnv); ok {
		return daemonChild(iface, fds)
	}
	foreground = foreground || os.Getenv(foregroundEnv) == "1"
	level, err := logLevel()
	if err != nil {
		fmt.Fprintln(stderr, "tunnel:", err)
		return 2
	}
	tunFD, tunGiven, err := launcherFD(tunFDEnv)
	var uapiFD uintptr
	var uapiGiven bool
	if err == nil {
		uapiFD, uapiGiven, err = launcherFD(uapiFDEnv)
	}
	if err != nil {
		fmt.Fprintln(stderr, "tunnel:", err)
		return 2
	}
	var tunDev tun.Device
	if tunGiven {
		tunDev, err = tunFromFD(tunFD)
	} else {
		tunDev, err = wgquick.CreateTUN(iface, wgquick.DefaultMTU)
	}
	if err != nil {
		fmt.Fprintln(stderr, "tunnel:", err)
		return 1
	}
	var uapi *os.File
	if uapiGiven {
		uapi = os.NewFile(uapiFD, socketPath(iface))
	} else if uapi, err = ipc.UAPIOpen(iface); err != nil {
		tunDev.Close()
		fmt.Fprintf(stderr, "tunnel: opening %s: %v\n", socketPath(iface), err)
		return 1
	}
	if foreground {
		logger := newLogger(stderr, iface)
		if err := serve(iface, tunDev, uapi, level, logger, func() {}); err != nil {
			logger.Print(err)
			return 1
		}
		return 0
	}
	if err := detach(iface, tunDev, uapi); err != nil {
		// No daemon runs: closing our descriptors removes the interface; the socket's file stays
		// unless removed by hand.
		tunDev.Close()
		uapi.Close()
		os.Remove(socketPath(iface))
		fmt.Fprintln(stderr, "tunnel:", err)
		return 1
	}
	return 0
}

// socketPath is where ipc.UAPIOpen puts INTERFACE's socket.
func socketPath(iface string) string {
	return filepath.Join("/var/run/wireguard", iface+".sock")
}

// newLogger returns the logger of the daemon's own lines; the device's go to standard output.
func newLogger(w io.Writer, iface string) *log.Logger {
	return log.New(w, fmt.Sprintf("tunnel (%s): ", iface), log.LstdFlags)
}

// logLevel reads logLevelEnv.
func logLevel() (int, error) {
	switch v := os.Getenv(logLevelEnv); v {
	case "", "error":
		return device.LogLevelError, nil
	case "verbose", "debug":
		return device.LogLevelVerbose, nil
	case "silent":
		return device.LogLevelSilent, nil
	default:
		return 0, fmt.Errorf("%s=%q: want verbose, error or silent", logLevelEnv, v)
	}
}

// detach starts the background daemon with the TUN and the UAPI socket and waits until it serves.
func detach(iface string, tunDev tun.Device, uapi *os.File) error {
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("finding the executable to start the daemon: %w", err)
	}
	readyR, readyW, err := os.Pipe()
	if err != nil {
		return err
	}
	defer readyR.Close()
	cmd := exec.Command(self, iface)
	// Descriptors 3, 4 and 5 (ExtraFiles start at 3).
	cmd.ExtraFiles = []*os.File{tunDev.File(), uapi, readyW}
	cmd.Env = append(os.Environ(), inheritedFDsEnv+"=3,4,5")
	cmd.Dir = "/" // hold no mount point busy
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	// Standard input and, without logFileEnv, output and error are /dev/null (exec.Cmd's nil).
	if path := os.Getenv(logFileEnv); path != "" {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
		if err != nil {
			readyW.Close()
			return fmt.Errorf("%s: %w", logFileEnv, err)
		}
		defer f.Close()
		cmd.Stdout, cmd.Stderr = f, f
	}
	err = cmd.Start()
	readyW.Close() // the child's copy alone is left: EOF when it closes it or dies
	if err != nil {
		return fmt.Errorf("starting the daemon: %w", err)
	}
	line, err := bufio.NewReader(readyR).ReadString('\n')
	line = strings.TrimSuffix(line, "\n")
	switch {
	case line == readyLine:
		return cmd.Process.Release()
	case err != nil && line == "":
		cmd.Wait()
		return fmt.Errorf("the daemon exited before serving %s (%v)", socketPath(iface), cmd.ProcessState)
	default:
		cmd.Wait()
		return errors.New(line)
	}
}

// daemonChild is the re-executed daemon: it serves what its parent created, and tells the parent
// on the readiness pipe when it serves or why it cannot.
func daemonChild(iface, fds string) int {
	var fd [3]uintptr
	parts := strings.Split(fds, ",")
	if len(parts) != len(fd) {
		fmt.Fprintf(os.Stderr, "tunnel: %s=%q: want three descriptors\n", inheritedFDsEnv, fds)
		return 2
	}
	for i, p := range parts {
		n, ok := parseFD(p)
		if !ok {
			fmt.Fprintf(os.Stderr, "tunnel: %s=%q: bad descriptor %q\n", inheritedFDsEnv, fds, p)
			return 2
		}
		fd[i] = n
	}
	ready := os.NewFile(fd[2], "readiness pipe")
	logger := newLogger(os.Stderr, iface) // the log file, or /dev/null
	served := false
	fail := func(err error) int {
		if !served {
			fmt.Fprintln(ready, err)
			ready.Close()
		}
		logger.Print(err)
		return 1
	}
	level, err := logLevel()
	if err != nil {
		return fail(err)
	}
	tunDev, err := tunFromFD(fd[0])
	if err != nil {
		return fail(err)
	}
	err = serve(iface, tunDev, os.NewFile(fd[1], socketPath(iface)), level, logger, func() {
		fmt.Fprintln(ready, readyLine)
		ready.Close()
		served = true
	})
	if err != nil {
		return fail(err)
	}
	return 0
}

// parseFD reads an inherited descriptor's number: 3 or more (0-2 are the standard streams).
func parseFD(s string) (uintptr, bool) {
	n, err := strconv.ParseUint(s, 10, 31)
	return uintptr(n), err == nil && n >= 3
}

// launcherFD reads the descriptor the variable env names, if set and not empty (as wireguard-go
// reads it), and marks it close-on-exec: the background daemon gets it again among the descriptors
// detach hands it.
func launcherFD(env string) (fd uintptr, given bool, err error) {
	s := os.Getenv(env)
	if s == "" {
		return 0, false, nil
	}
	fd, ok := parseFD(s)
	if !ok {
		return 0, true, fmt.Errorf("%s=%q: want the number of an open descriptor, 3 or more", env, s)
	}
	unix.CloseOnExec(int(fd))
	return fd, true, nil
}

// tunFromFD returns the TUN device of an inherited descriptor.
func tunFromFD(fd uintptr) (tun.Device, error) {
	// Inherited descriptors arrive blocking; the TUN's reads go through Go's poller.
	if err := unix.SetNonblock(int(fd), true); err != nil {
		return nil, fmt.Errorf("TUN descriptor %d: %w", fd, err)
	}
	dev, err := tun.CreateTUNFromFile(os.NewFile(fd, "/dev/net/tun"), wgquick.DefaultMTU)
	if err != nil {
		return nil, fmt.Errorf("TUN descriptor %d: %w", fd, err)
	}
	return dev, nil
}

// serve runs the device on tunDev with the UAPI socket uapi, calls ready once it serves, and returns
// nil on SIGTERM or SIGINT, or why it stopped: the interface deleted (as wg-quick down does), the
// socket removed, the device closed. The socket is removed on return; the interface goes with the
// device's TUN.
func serve(iface string, tunDev tun.Device, uapi *os.File, level int, logger *log.Logger, ready func()) error {
	// Signals first, so that one arriving during setup ends the run instead of the process.
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sig)

	dev := device.NewDevice(tunDev, conn.NewDefaultBind(), device.NewLogger(level, fmt.Sprintf("(%s) ", iface)))
	defer dev.Close()
	listener, err := ipc.UAPIListen(iface, uapi)
	if err != nil {
		os.Remove(socketPath(iface))
		return fmt.Errorf("listening on %s: %w", socketPath(iface), err)
	}
	defer listener.Close() // unlinks the socket

	stopWatch := make(chan struct{})
	defer close(stopWatch)
	deleted, err := wgquick.WatchDeleted(iface, stopWatch)
	if err != nil {
		return fmt.Errorf("watching %s: %w", iface, err)
	}
	accepted := make(chan error, 1)
	go func() {
		for {
			c, err := listener.Accept()
			if err != nil {
				accepted <- err
				return
			}
			go dev.IpcHandle(c)
		}
	}()
	ready()
	if level >= device.LogLevelVerbose {
		logger.Printf("serving %s", socketPath(iface))
	}

	select {
	case s := <-sig:
		if level >= device.LogLevelVerbose {
			logger.Printf("%v: shutting down", s)
		}
		return nil
	case <-deleted:
		return fmt.Errorf("interface %s was deleted", iface)
	case err := <-accepted:
		// ipc's listener also fails when it sees the socket's file change; its error then says
		// little (EINVAL from its watch), the file's absence more.
		if _, statErr := os.Lstat(socketPath(iface)); errors.Is(statErr, os.ErrNotExist) {
			return fmt.Errorf("%s was removed", socketPath(iface))
		}
		return fmt.Errorf("accepting on %s: %w", socketPath(iface), err)
	case <-dev.Wait():
		return fmt.Errorf("the device stopped (interface %s deleted or its TUN failed)", iface)
	}
}
