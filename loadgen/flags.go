// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wirebatch/wirebatch/loadgen/internal/payload"
	"github.com/wirebatch/wirebatch/loadgen/internal/sender"
	"github.com/wirebatch/wirebatch/udp"
)

// Defaults shared by the commands.
const (
	defaultBatch        = 64
	defaultSocketBuffer = 8 << 20
	defaultTimeout      = 3 * time.Second
	// defaultInterval and defaultDuration are iperf3's (-i 1, -t 10), and
	// so is defaultBitrate, its UDP rate when -b is not given.
	defaultInterval = time.Second
	defaultDuration = 10 * time.Second
	defaultBitrate  = 1e6
)

// maxRate bounds packets per second: far above what one sender reaches,
// it only rejects typing errors.
const maxRate = 1e9

// senderFlags are the flags of send and sweep.
type senderFlags struct {
	to, control string
	size        string
	duration    time.Duration
	warmup      time.Duration
	drain       time.Duration
	timeout     time.Duration
	flows       int
	batch       int
	gso         bool
	gsoSegments int
	sockBuf     int
	jsonOut     bool
	quiet       bool
}

// register defines the flags on fs; duration is -duration's default, 0
// for a flag that must be given.
func (f *senderFlags) register(fs *flag.FlagSet, duration time.Duration) {
	fs.StringVar(&f.to, "to", "", "receiver `ADDR:PORT` (UDP)")
	fs.StringVar(&f.control, "control", "", "receiver control `ADDR:PORT` (TCP; default: -to)")
	fs.DurationVar(&f.duration, "duration", duration, "measured sending time, e.g. 10s")
	fs.DurationVar(&f.warmup, "warmup", 0, "unmeasured sending before -duration")
	fs.DurationVar(&f.drain, "drain", 200*time.Millisecond, "wait for packets in flight before collecting counts")
	fs.DurationVar(&f.timeout, "timeout", defaultTimeout, "bound on connecting to the receiver and on each control exchange")
	fs.IntVar(&f.flows, "flows", 1, "number of flows (UDP source ports)")
	fs.IntVar(&f.batch, "batch", defaultBatch, "messages per sendmmsg")
	fs.BoolVar(&f.gso, "gso", false, "pack equal-sized packets into UDP GSO messages")
	fs.IntVar(&f.gsoSegments, "gso-segments", udp.MaxGSOSegments, "packets per GSO message, with -gso")
	fs.IntVar(&f.sockBuf, "sockbuf", defaultSocketBuffer, "socket buffer `bytes`")
	fs.BoolVar(&f.jsonOut, "json", false, "print the report as JSON")
	fs.BoolVar(&f.quiet, "quiet", false, "no progress display on stderr")
}

// config checks the flags shared by send and sweep and returns a sender
// configuration without rate and sizes.
func (f *senderFlags) config() (sender.Config, error) {
	if f.to == "" {
		return sender.Config{}, fmt.Errorf("-to ADDR:PORT is required")
	}
	if _, _, err := net.SplitHostPort(f.to); err != nil {
		return sender.Config{}, fmt.Errorf("-to %q: %v", f.to, err)
	}
	if f.duration <= 0 {
		return sender.Config{}, fmt.Errorf("-duration is required and must be positive (e.g. -duration 10s)")
	}
	if f.drain < 0 {
		return sender.Config{}, fmt.Errorf("-drain %v: must not be negative", f.drain)
	}
	segments := 0
	if f.gso {
		if f.gsoSegments < 2 || f.gsoSegments > udp.MaxGSOSegments {
			return sender.Config{}, fmt.Errorf("-gso-segments %d: want 2 to %d", f.gsoSegments, udp.MaxGSOSegments)
		}
		segments = f.gsoSegments
	}
	return sender.Config{
		To: f.to, Control: f.control,
		Duration: f.duration, Warmup: f.warmup, Drain: f.drain, Timeout: f.timeout,
		Flows: f.flows, Batch: f.batch, GSOSegments: segments, SocketBuffer: f.sockBuf,
	}, nil
}

// isIPv6 says whether ADDR:PORT names an IPv6 host; IMIX payload sizes
// depend on it.
func isIPv6(hostPort string) bool {
	host, _, err := net.SplitHostPort(hostPort)
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.To4() == nil
}

// parseRate parses -rate: "max" (0), or packets per second with an optional
// k or M suffix.
func parseRate(s string) (float64, error) {
	if s == "max" {
		return 0, nil
	}
	arg, mult := s, 1.0
	switch {
	case strings.HasSuffix(s, "k"):
		mult, s = 1e3, strings.TrimSuffix(s, "k")
	case strings.HasSuffix(s, "M"):
		mult, s = 1e6, strings.TrimSuffix(s, "M")
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || v*mult < 1 || v*mult > maxRate {
		return 0, fmt.Errorf("-rate %q: want packets per second from 1 to 1e9 (100000, 100k, 2M) or max", arg)
	}
	return v * mult, nil
}

// parseBitrate parses -bitrate as iperf3 parses -b: bits per second with an
// optional K, M, G or T suffix in either case, decimal (1M is 10^6 bit/s);
// 0 (or max) is as fast as possible.
func parseBitrate(s string) (float64, error) {
	if s == "max" {
		return 0, nil
	}
	arg, mult := s, 1.0
	if n := len(s); n > 0 {
		switch s[n-1] | 0x20 { // ASCII lower case
		case 'k':
			mult = 1e3
		case 'm':
			mult = 1e6
		case 'g':
			mult = 1e9
		case 't':
			mult = 1e12
		}
		if mult != 1 {
			s = s[:n-1]
		}
	}
	v, err := strconv.ParseFloat(s, 64)
	bps := v * mult
	if err != nil || math.IsInf(bps, 0) || !(bps == 0 || bps >= 1) {
		return 0, fmt.Errorf("-bitrate %q: want bits per second (500K, 100M, 2.5G), or 0 or max for as fast as possible", arg)
	}
	return bps, nil
}

// sendRate returns the packets per second that -rate or -bitrate ask for
// (0: as fast as possible), given the payload sizes; with neither, the rate
// is defaultBitrate. A bit rate counts UDP payload bits, as iperf3 does,
// and a schedule of several sizes is paced at its mean size.
func sendRate(rateArg, bitrateArg string, sizes []int) (float64, error) {
	if rateArg != "" {
		if bitrateArg != "" {
			return 0, errors.New("-rate and -bitrate both given: use one (packets per second, or bits per second)")
		}
		return parseRate(rateArg)
	}
	bps := defaultBitrate
	if bitrateArg != "" {
		var err error
		if bps, err = parseBitrate(bitrateArg); err != nil {
			return 0, err
		}
	}
	pps := bps / (payload.MeanSize(sizes) * 8)
	if pps > maxRate {
		return 0, fmt.Errorf("-bitrate %s: %.3g packets per second is above 1e9", bitrateArg, pps)
	}
	return pps, nil
}

// newFlagSet returns the flag set of one command, whose usage message
// starts with the command's synopsis.
func newFlagSet(name, synopsis string) *flag.FlagSet {
	fs := flag.NewFlagSet("loadgen "+name, flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: loadgen %s %s\n", name, synopsis)
		fs.PrintDefaults()
	}
	return fs
}

// parseArgs parses args and rejects positional leftovers, which are
// usually a misspelt flag. Asked for help (-h, -help), it prints the usage
// on stdout and returns flag.ErrHelp; on a bad flag it prints the error and
// the usage on stderr.
func parseArgs(fs *flag.FlagSet, args []string, stdout, stderr io.Writer) error {
	var msg bytes.Buffer
	fs.SetOutput(&msg)
	err := fs.Parse(args)
	fs.SetOutput(stderr)
	switch {
	case errors.Is(err, flag.ErrHelp):
		stdout.Write(msg.Bytes())
		return err
	case err != nil:
		stderr.Write(msg.Bytes())
		return err
	case fs.NArg() > 0:
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	return nil
}

// progressWriter returns w if it is a terminal and progress is wanted, for
// the live one-line display, or nil.
func progressWriter(w io.Writer, quiet bool) io.Writer {
	f, ok := w.(*os.File)
	if quiet || !ok {
		return nil
	}
	if _, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS); err != nil {
		return nil
	}
	return w
}
