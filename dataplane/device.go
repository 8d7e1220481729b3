// Copyright 2026 The wirebatch Authors. Use of this source code is governed by the MIT
// license in the LICENSE file at the root of the repository.

package dataplane

// The Device pipeline: a TUN device and a UDP socket joined by the two stages.
//
// Outbound (TUN -> UDP):
//
//	out.free (ring.MPMC) + pool.Get --> tunReader --> out.work (ring.MPMC) --> Workers x encrypt
//	                                                                           --> out.commit: send, in read order --> pool.Put + out.free
//
// Inbound (UDP -> TUN):
//
//	in.free (ring.MPMC) + pool.Get --> udpReader --> in.work (ring.MPMC) --> Workers x decrypt
//	                                       '--> handshake queue --> control plane   --> in.commit: write, in read order --> pool.Put + in.free
//
// The unit of work is a unit: the per-packet metadata of up to batch.MaxPackets packets, and while it is in
// flight a *batch.Batch whose batch.MaxPackets buffers hold the packets. Config.Batches units per direction are
// made at start and circulate forever; every packet buffer comes from the Device's one batch.Pool,
// which allocates all its batches at start and never more: 2 x Config.Batches of them for the units
// and one for the control sends (ctl below), (2 x Batches + 1) x batch.BatchBytesFor(bufLen) bytes,
// capped by Config.MaxMemory. That is the memory bound whatever the load: under overload a reader
// waits for a free unit and the kernel's queues (TUN, socket) absorb or drop the excess. Besides the
// pool: for a TUN that is not a TUNGROWriter, groRooms buffers of 64 KiB in tunBatcher for the TUN's
// own coalescing (tunwrite.go); and what the TUN and the UDP hold (tunvnet's TUN: a 64 KiB read
// buffer). Nothing is allocated per batch or per packet (nor by package udp's socket).
//
// Why one pool of that size cannot deadlock the two directions: a reader takes a unit before a
// batch and the committing worker gives the batch back before the unit, so a direction never holds
// more batches than it has units, and the pool has a batch for every unit of both directions plus
// the control batch. Get therefore finds a batch at once (it waits only if a batch went missing,
// and returns on Close), so one direction stalled on its output never starves the other direction's
// reader of the batch it needs to drain. A smaller shared pool could deadlock two Devices joined by
// blocking doubles (as the in-memory ones are: a writer waits while the other end's queue is full):
// A's and B's senders each blocked on the other's full inbound queue, whose readers wait for
// batches that only those senders hold. One pool rather than one per direction keeps the bound in
// one place, and one MaxMemory.
//
// Ownership: a unit belongs to its reader from the free ring until it is enqueued on the work ring,
// numbered in read order; then the worker that dequeues it owns its contents until it hands it to
// its direction's committer (commit.go). The committer runs the last step (send or write) of each
// unit in read order, on whichever worker finds the unit next in line ready, one worker at a time,
// and gives the unit back to the free ring. Its batch travels with it: the reader Gets it after
// taking the unit (unit.bufs then alias its buffers) and the committing worker Puts it back before
// freeing the unit; the rings' edges and the committer's mutex hand the unit on, and the batch's
// bytes with it, and the pool orders a Put before the next Get of the batch. Batches leave in the
// order they arrived however the workers race: per-peer packet order is preserved end to end
// (WireGuard does not require it, but TCP performs badly without it, and the replay window would
// drop packets reordered by more than its width).
//
// Shutdown: Close cancels the readers' pool waits and closes the TUN and the UDP socket; the readers'
// blocked calls fail, and each reader closes its work ring. Workers drain the work ring, committing
// what they finish, and exit on ErrClosed (every unit enqueued is finished, so every one is
// committed); the handshake goroutine drains its queue. Close returns after every goroutine has.

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/wirebatch/wirebatch/batch"
	"github.com/wirebatch/wirebatch/kernels"
	"github.com/wirebatch/wirebatch/protocol"
	"github.com/wirebatch/wirebatch/ring"
)

const (
	// tunOffset is where plaintext starts in a buffer: the batch's headroom. It holds the transport
	// header once a packet is sealed, and during TUN I/O the 10-byte virtio-net header that a TUN
	// with offloads (golang.zx2c4.com/wireguard/tun) reads and writes just before the packet, which
	// is why that package wants an offset of at least 10 (batch.Headroom is 16).
	tunOffset = batch.Headroom
	// udpOffset is where a datagram starts: the header right before the plaintext, at byte 0 of the
	// buffer. (A constant index must not be negative: a Headroom smaller than protocol.TransportHeaderSize would not
	// compile.)
	udpOffset = tunOffset - protocol.TransportHeaderSize

	// maxWorkers keeps concurrent counter reservations within the slack below 2^64 (see encrypt.go).
	maxWorkers = 64
	// maxBatches bounds the units per direction so that reordering never pushes a good message out
	// of the receiver's replay window (ReplayWindow, RFC 6479). A sender's encrypt workers reserve
	// counters in the order they finish but its committer sends in read order, so its messages
	// leave up to (Batches+1)*batch.MaxPackets counters out of order (its units and the control sends'
	// batch); a receiver's decrypt workers check replay in the order they finish, up to Batches*batch.MaxPackets
	// counters out of order again. Half the window for each side's share keeps the sum inside it
	// whatever the peer's configuration, as long as it obeys the same bound: (30+1)*128 = 3968 <=
	// 8128/2.
	maxBatches = ReplayWindow/2/batch.MaxPackets - 1

	// handshakeQueue is how many handshake messages wait for the control plane (wireguard-go's
	// QueueHandshakeSize); more are dropped and counted (DeviceStats.HandshakesDropped).
	handshakeQueue = 1024
)

// Config configures a Device. The zero value is usable.
type Config struct {
	// MTU of the TUN device: the largest IP packet sent through the tunnel. Default 1420.
	MTU int
	// PeerMTU is the largest tunnel MTU a peer may use: datagrams of up to PeerMTU+32 bytes (its
	// largest packets, sealed) are received, whatever our MTU (the receive buffers are sized for
	// it, and their memory grows with it). Default the larger of MTU and 1500, so that peers on
	// plain Ethernet MTUs are heard; a datagram longer than that is dropped as malformed. Raise it
	// for peers with jumbo frames; wireguard-go takes datagrams of up to 65535 bytes.
	PeerMTU int
	// Workers is the number of encrypt workers and of decrypt workers. Default GOMAXPROCS, at most 64.
	Workers int
	// Batches is the number of batch units per direction: how many batches of batch.MaxPackets packets each
	// direction may have in flight (being read, sealed or opened, written). Default 2*Workers+2, or
	// as many as MaxMemory holds if that is fewer; at most 30, so that the messages in flight stay
	// within the replay window however the workers reorder them.
	Batches int
	// MaxMemory caps the packet memory, in bytes: the MaxBytes of the Device's batch.Pool, which
	// allocates 2*Batches+1 batches up front, each batch.BatchBytesFor(buffer length) bytes with
	// buffers of max(MTU, PeerMTU)+48 bytes rounded up to 64 (about 200 KiB a batch at the
	// defaults). Not counted: the packets staged for peers waiting for a handshake, at most
	// MaxStaged of MTU bytes per such peer, allocated when the first is staged and freed when they
	// are sent or dropped; and the control plane's handshake queue (handshakeQueue messages of at
	// most 148 bytes). Zero
	// means no cap beyond what Batches implies; NewDevice fails if an explicit Batches does not fit.
	MaxMemory int
	// Handshaker receives handshake messages and peer events, and installs keypairs. nil drops
	// handshake messages and ignores events (keys are then installed with InstallKeypair).
	Handshaker Handshaker
}

// Handshaker is what a Device needs from a handshake implementation (package handshake, adapted by
// the tunnel; or StaticKeys). The Device calls Attach once, from NewDevice, before starting; then
// HandleHandshake for every handshake message received and PeerEvent for every peer event. Neither
// may block for long: HandleHandshake runs on handshake goroutines of its own, one per CPU, several
// at once (so a slow Diffie-Hellman does not stall the data path, and handshakes use the CPUs the
// data path leaves free; Close waits for them to return), PeerEvent on the data path's. Both may
// call any Device method (PeerEvent is never called with a Device lock held); KeypairRetired is
// called under the peer's keypair lock and must not call back for that peer.
type Handshaker interface {
	// Attach hands the control plane its Device, for InstallKeypair, SendHandshake, SendKeepalive
	// and peer management.
	Attach(d *Device)
	// HandleHandshake gets a handshake message (types 1-3, of the exact length of its type) and
	// the address it came from. msg is valid only during the call.
	HandleHandshake(msg []byte, src netip.AddrPort)
	// Observer's PeerEvent reports what happened to a peer during one batch (see Event): the
	// inputs of the timers of section 6; KeypairRetired frees a local index.
	Observer
}

// DeviceStats are a Device's counters: the stages' (Stats) and the pipeline's own.
type DeviceStats struct {
	Stats
	Handshakes        uint64 // handshake messages passed to the control plane
	HandshakesDropped uint64 // handshake messages dropped: the control plane lagged, or there is none
	WriteErrors       uint64 // failed TUN write calls, and datagrams the UDP socket refused
	// Staged counts outbound packets kept for after a handshake (they are also among the
	// VerdictNoKey and VerdictKeyExpired drops of the moment); StagedDropped those evicted by newer
	// ones or dropped with DropStaged or RemovePeer.
	Staged, StagedDropped uint64
}

// unit is the per-packet state of a batch that circulates through one direction, and while in flight
// the batch of buffers that holds the packets.
type unit struct {
	b        *batch.Batch             // from the reader's take to the commit's release; nil in the free ring
	bufs     [batch.MaxPackets][]byte // b's whole buffers (Batch.Buffers), valid while b is held
	view     [batch.MaxPackets][]byte // I/O scratch: the slices handed to TUN/UDP calls
	sizes    [batch.MaxPackets]int
	addrs    [batch.MaxPackets]netip.AddrPort
	peers    [batch.MaxPackets]*Peer
	verdicts [batch.MaxPackets]Verdict
	from     [batch.MaxPackets]int  // send: the packet index of each datagram of view
	failed   [batch.MaxPackets]bool // send: the datagrams of view the socket refused
	n        int
	seq      uint64 // the reader's number for it: its direction's committer commits in this order
}

func (u *unit) packets(offset int) Packets {
	return Packets{Bufs: u.bufs[:u.n], Sizes: u.sizes[:u.n], Offset: offset,
		Addrs: u.addrs[:u.n], Peers: u.peers[:u.n], Verdicts: u.verdicts[:u.n]}
}

// direction is one way through the device: its free units, the work ring from its reader to its
// workers, and the committer that ends each unit in read order.
type direction struct {
	free   *ring.MPMC[*unit]
	work   *ring.MPMC[*unit]
	commit *committer
}

// newDirection makes a direction of units units whose committer ends each unit with step.
func newDirection(units int, step func(*unit)) direction {
	d := direction{
		free:   ring.NewMPMC[*unit](units),
		work:   ring.NewMPMC[*unit](units),
		commit: newCommitter(units, step),
	}
	for range units {
		d.free.TryEnqueue([]*unit{{}})
	}
	return d
}

// take gives u, just dequeued from a free ring, a batch from the pool. It waits while the pool is
// exhausted (see the sizing above: only if a batch went missing) and reports false once Close has
// canceled d.ctx.
func (d *Device) take(u *unit) bool {
	b, err := d.pool.Get(d.ctx)
	if err != nil {
		return false
	}
	u.b = b
	b.Buffers(u.bufs[:])
	return true
}

// release gives u's batch back to the pool, then u to free: in this order, so that a direction never
// holds more batches than units. u.bufs keep pointing into the batch until the next take rewrites
// them; nobody reads them in between.
func (d *Device) release(u *unit, free *ring.MPMC[*unit]) {
	d.pool.Put(u.b)
	u.b = nil
	free.TryEnqueue([]*unit{u}) // always fits: the ring has room for every unit
}

// Device runs the data plane between a TUN device and a UDP socket.
type Device struct {
	tun TUN
	// How the inbound committer writes to tun, one of the two: groWriter where tun is a
	// TUNGROWriter, else tunBatcher.
	groWriter  TUNGROWriter
	tunBatcher *tunBatcher
	udp        UDP
	// sendReporter is udp as a UDPSendReporter, nil if it is not one.
	sendReporter UDPSendReporter
	cp           Handshaker
	mtu          int
	peers        *PeerSet

	// pool holds every packet buffer of the Device (see the top of this file). ctx, canceled by
	// stop in Close, ends the readers' waits for it.
	pool    *batch.Pool
	ctx     context.Context
	stop    context.CancelFunc
	out, in direction
	hs      chan handshakeMsg

	// hsMu serialises SendHandshake over hsOut and hsDst.
	hsMu  sync.Mutex
	hsOut [1][]byte
	hsDst [1]netip.AddrPort

	// ctlMu serialises the transport messages sent outside the pipeline (SendKeepalive, staged
	// packets) over the batch below. The events of these sends are held by ctlEnc and reported
	// after ctlMu is released, so a control plane may call back into the Device from PeerEvent.
	// ctlBufs are the first MaxStaged buffers of a batch the Device takes from its pool in NewDevice
	// and keeps for its whole life: the pool allocates that batch up front either way, and holding
	// it spares the control sends a Get (the outbound commit sends staged packets while it holds
	// its own batch, so it must never wait for another).
	ctlMu       sync.Mutex
	ctlEnc      *Encrypter
	ctlBufs     [MaxStaged][]byte
	ctlSizes    [MaxStaged]int
	ctlAddrs    [MaxStaged]netip.AddrPort
	ctlPeers    [MaxStaged]*Peer
	ctlVerdicts [MaxStaged]Verdict
	ctlOut      [MaxStaged][]byte

	// Statistics only: no other memory is published through these.
	handshakes, handshakesDropped, writeErrors atomic.Uint64
	staged, stagedDropped                      atomic.Uint64

	// closing is set by Close before it closes the TUN and the UDP socket; a reader whose call
	// failed Loads it to tell shutdown from a transient error, and the Send methods to refuse
	// work. It orders nothing else: the rings' Close and the WaitGroup do the handing over.
	closing   atomic.Bool
	closeOnce sync.Once
	closeErr  error

	// stopped is closed when the Device stops: Close, or a reader that cannot go on (fail), whose
	// error failErr then holds (set before stopped is closed, read after: the close orders them).
	stopped  chan struct{}
	stopOnce sync.Once
	failErr  error
	wg       sync.WaitGroup
}

// handshakeMsg is a handshake message copied out of a receive batch (by value: no allocation).
type handshakeMsg struct {
	buf [protocol.InitiationSize]byte
	n   int
	src netip.AddrPort
}

// NewDevice starts a Device on tun and udp. It owns both from now on and closes them in Close. A
// tun whose file is a Linux TUN with virtio-net headers (golang.zx2c4.com/wireguard/tun's
// CreateTUN opens it so where the kernel offers offloads) is read and written through package
// tunvnet (tunvnet.New), which does the offloads itself; tun's Read and Write are not called then.
func NewDevice(tun TUN, udp UDP, cfg Config) (*Device, error) {
	if tun == nil || udp == nil {
		return nil, errors.New("dataplane: NewDevice needs a TUN and a UDP")
	}
	if cfg.MTU == 0 {
		cfg.MTU = 1420
	}
	if cfg.MTU < 576 || cfg.MTU > 65535 {
		return nil, errors.New("dataplane: MTU out of range")
	}
	if cfg.PeerMTU == 0 {
		cfg.PeerMTU = max(cfg.MTU, 1500)
	}
	if cfg.PeerMTU < 576 || cfg.PeerMTU > 65535 {
		return nil, errors.New("dataplane: PeerMTU out of range")
	}
	if cfg.Workers <= 0 {
		cfg.Workers = runtime.GOMAXPROCS(0)
	}
	cfg.Workers = min(cfg.Workers, maxWorkers)
	if cfg.MaxMemory < 0 {
		return nil, errors.New("dataplane: negative MaxMemory")
	}
	// A buffer holds the headroom, the largest packet we send or a peer of PeerMTU sends (padding
	// stops at the MTU) and the tag, rounded up to cache lines. The extra protocol.PaddingMultiple bytes make
	// it longer than the largest datagram such a peer sends (PeerMTU+32 bytes, read at udpOffset 0),
	// so that a datagram which fills it was truncated (see divert).
	bufLen := (tunOffset + max(cfg.MTU, cfg.PeerMTU) + protocol.PaddingMultiple + kernels.TagSize + 63) &^ 63
	batchBytes := batch.BatchBytesFor(bufLen)
	if cfg.Batches > maxBatches {
		return nil, fmt.Errorf("dataplane: Batches %d exceeds %d, the most whose counters the replay window covers", cfg.Batches, maxBatches)
	}
	if cfg.Batches <= 0 {
		cfg.Batches = min(2*cfg.Workers+2, maxBatches)
		if cfg.MaxMemory > 0 {
			cfg.Batches = min(cfg.Batches, (cfg.MaxMemory/batchBytes-1)/2)
		}
		if cfg.Batches < 1 {
			return nil, fmt.Errorf("dataplane: MaxMemory %d is less than the 3 batches of %d bytes a Device needs", cfg.MaxMemory, batchBytes)
		}
	}
	batches := 2*cfg.Batches + 1 // a batch for every unit of both directions, and ctl's
	maxBytes := cfg.MaxMemory
	if maxBytes == 0 {
		maxBytes = batches * batchBytes
	}
	pool, err := batch.NewPool(batch.PoolConfig{MaxBytes: maxBytes, Batches: batches, BufferLen: bufLen})
	if err != nil {
		return nil, fmt.Errorf("dataplane: %d batches for Batches %d: %w", batches, cfg.Batches, err)
	}
	ctx, stop := context.WithCancel(context.Background())
	d := &Device{
		tun: offloadTUN(tun), udp: udp, cp: cfg.Handshaker, mtu: cfg.MTU,
		pool: pool, ctx: ctx, stop: stop,
		hs: make(chan handshakeMsg, handshakeQueue), stopped: make(chan struct{}),
	}
	d.out = newDirection(cfg.Batches, func(u *unit) { d.send(u); d.release(u, d.out.free) })
	d.in = newDirection(cfg.Batches, func(u *unit) { d.write(u); d.release(u, d.in.free) })
	d.sendReporter, _ = udp.(UDPSendReporter)
	if w, ok := d.tun.(TUNGROWriter); ok {
		d.groWriter = w
	} else {
		d.tunBatcher = newTunBatcher()
	}
	d.peers = NewPeerSet(deviceObserver{d})
	d.ctlEnc = NewEncrypter(d.peers, d.mtu)
	d.ctlEnc.hold = true
	d.ctlEnc.held = make([]heldEvent, 0, MaxStaged)
	// Never nil: the pool is full. Only the buffers are kept: the batch never goes back.
	pool.TryGet().Buffers(d.ctlBufs[:])
	if d.cp != nil {
		d.cp.Attach(d)
	}
	hsWorkers := runtime.GOMAXPROCS(0)
	d.wg.Add(2 + hsWorkers + 2*cfg.Workers)
	go d.tunReader()
	go d.udpReader()
	for range hsWorkers {
		go d.handshakeLoop()
	}
	for range cfg.Workers {
		go d.encryptWorker()
		go d.decryptWorker()
	}
	return d, nil
}

// Close stops the device: it closes the TUN and the UDP socket and waits for every goroutine. Packets
// in flight are dropped. It returns the first error of the two closes.
func (d *Device) Close() error {
	d.closeOnce.Do(func() {
		d.stopOnce.Do(func() { close(d.stopped) })
		d.closing.Store(true)
		d.stop()
		err1 := d.tun.Close()
		err2 := d.udp.Close()
		d.wg.Wait()
		d.closeErr = errors.Join(err1, err2)
	})
	return d.closeErr
}

// Wait returns a channel that is closed when the Device stops: when Close is called, or when its
// TUN or its UDP socket fails for good (the TUN device was deleted, the socket closed behind its
// back), which leaves a direction of the data path dead. Err then says why. A process serving a
// Device waits on it beside its signals, so that it exits instead of running half dead.
func (d *Device) Wait() <-chan struct{} { return d.stopped }

// Err returns why the Device stopped by itself (a TUN or UDP read that cannot go on), or nil while
// it runs and after Close.
func (d *Device) Err() error {
	select {
	case <-d.stopped:
		return d.failErr
	default:
		return nil
	}
}

// fail records err as why the Device stopped, unless Close came first, and closes Wait's channel.
// The reader that failed has returned; the Device's other goroutines run until Close.
func (d *Device) fail(err error) {
	d.stopOnce.Do(func() {
		d.failErr = err
		close(d.stopped)
	})
}

// fatalReadError reports whether a TUN or UDP read error means the reads cannot go on: the file or
// socket is gone or broken (EBADF, EBADFD: a deleted TUN device; EIO, ENODEV, ENXIO, ENOTSOCK,
// EFAULT). Everything else (a datagram or packet the offloads cannot split, ENOBUFS, an ICMP error
// reported on the socket) is transient: what was read is dropped and the read tried again.
func fatalReadError(err error) bool {
	var errno syscall.Errno
	if !errors.As(err, &errno) {
		return false
	}
	switch errno {
	case syscall.EBADF, syscall.EBADFD, syscall.EIO, syscall.ENODEV, syscall.ENXIO, syscall.ENOTSOCK, syscall.EFAULT:
		return true
	}
	return false
}

// Peers returns the device's PeerSet (peers, allowed IPs, keypairs, stats).
func (d *Device) Peers() *PeerSet { return d.peers }

// AddPeer adds a peer (see PeerSet.AddPeer).
func (d *Device) AddPeer(c PeerConfig) *Peer { return d.peers.AddPeer(c) }

// RemovePeer removes a peer (see PeerSet.RemovePeer) and drops its staged packets.
func (d *Device) RemovePeer(p *Peer) {
	d.peers.RemovePeer(p)
	d.DropStaged(p)
}

// InstallKeypair installs a session for p (see PeerSet.InstallKeypair). A keypair we initiated may
// send at once: p's staged packets go out with it.
func (d *Device) InstallKeypair(p *Peer, c KeypairConfig) (*Keypair, error) {
	kp, err := d.peers.InstallKeypair(p, c)
	if err == nil && c.Initiator {
		d.sendStaged(p)
	}
	return kp, err
}

// DropStaged drops the packets staged for p (when the control plane gives up on a handshake).
func (d *Device) DropStaged(p *Peer) {
	d.stagedDropped.Add(uint64(p.staged.drop()))
}

// deviceObserver passes the PeerSet's reports on to the control plane, after sending the staged
// packets of a peer whose responder keypair was just confirmed.
type deviceObserver struct{ d *Device }

func (o deviceObserver) PeerEvent(p *Peer, ev Event) {
	if ev&EventKeypairConfirmed != 0 {
		o.d.sendStaged(p)
	}
	if o.d.cp != nil {
		o.d.cp.PeerEvent(p, ev)
	}
}

func (o deviceObserver) KeypairRetired(kp *Keypair) {
	if o.d.cp != nil {
		o.d.cp.KeypairRetired(kp)
	}
}

// stagePacket keeps an outbound packet of p that found no usable keypair.
func (d *Device) stagePacket(p *Peer, pkt []byte) {
	staged, evicted := p.staged.push(pkt, d.mtu)
	if staged {
		d.staged.Add(1)
	}
	if evicted {
		d.stagedDropped.Add(1)
	}
}

// sendStaged seals and sends p's staged packets with its current keypair, outside the pipeline.
func (d *Device) sendStaged(p *Peer) {
	if d.closing.Load() {
		return
	}
	for {
		d.ctlMu.Lock()
		n := p.staged.drain(d.ctlBufs[:], d.ctlSizes[:], tunOffset)
		if n > 0 {
			d.ctlSend(n)
		}
		d.ctlUnlock()
		if n < MaxStaged {
			return
		}
	}
}

// sendLateStaged sends the packets b staged for peers that can send by now. The encrypt stage
// reports EventNoKeypair before this sender stages the packets, so a handshake may complete in
// between, its InstallKeypair (or confirmation) draining the peer's waitQueue before they are in
// it. Either this check sees the new keypair or that drain sees the packets: the queue's push
// happens before the Load of current here, and the Store of current before the drain
// (sequentially consistent atomics and the queue's mutex order them).
func (d *Device) sendLateStaged(b *unit) {
	var last *Peer
	var now time.Time // read once a packet needs it: most batches have none staged
	for i := range b.n {
		p := b.peers[i]
		if v := b.verdicts[i]; p == nil || p == last || (v != VerdictNoKey && v != VerdictKeyExpired) || b.sizes[i] == 0 {
			continue
		}
		last = p
		if now.IsZero() {
			now = time.Now()
		}
		if kp := p.current.Load(); kp != nil && !kp.expired(now) && kp.sendCounter.Load() < protocol.RejectAfterMessages {
			d.sendStaged(p)
		}
	}
}

// ctlSend seals the first n packets of the control batch (at tunOffset, with ctlSizes and ctlPeers
// set) and sends those that may go. It returns how many were sent. Called with ctlMu held.
func (d *Device) ctlSend(n int) (int, error) {
	d.ctlEnc.Encrypt(Packets{Bufs: d.ctlBufs[:n], Sizes: d.ctlSizes[:n], Offset: tunOffset,
		Addrs: d.ctlAddrs[:n], Peers: d.ctlPeers[:n], Verdicts: d.ctlVerdicts[:n]})
	k := 0
	for i := range n {
		if d.ctlVerdicts[i] == VerdictOK {
			d.ctlOut[k] = d.ctlBufs[i][udpOffset : udpOffset+d.ctlSizes[i]]
			d.ctlAddrs[k] = d.ctlAddrs[i]
			k++
		}
	}
	clear(d.ctlPeers[:n])
	if k == 0 {
		return 0, nil
	}
	err := d.udp.WriteBatch(d.ctlOut[:k], d.ctlAddrs[:k])
	clear(d.ctlOut[:k])
	if err != nil {
		d.writeErrors.Add(1)
	}
	return k, err
}

// Stats returns the device's counters.
func (d *Device) Stats() DeviceStats {
	return DeviceStats{
		Stats:             d.peers.Stats(),
		Handshakes:        d.handshakes.Load(),
		HandshakesDropped: d.handshakesDropped.Load(),
		WriteErrors:       d.writeErrors.Load(),
		Staged:            d.staged.Load(),
		StagedDropped:     d.stagedDropped.Load(),
	}
}

// ErrDeviceClosed is returned by the Send methods after Close.
var ErrDeviceClosed = errors.New("dataplane: device closed")

// SendHandshake sends a handshake message (built by the control plane) to dst.
func (d *Device) SendHandshake(dst netip.AddrPort, msg []byte) error {
	if d.closing.Load() {
		return ErrDeviceClosed
	}
	d.hsMu.Lock()
	defer d.hsMu.Unlock()
	d.hsOut[0], d.hsDst[0] = msg, dst
	err := d.udp.WriteBatch(d.hsOut[:], d.hsDst[:])
	d.hsOut[0] = nil
	return err
}

// ErrNotSent is returned by SendKeepalive when the peer has no usable keypair or endpoint.
var ErrNotSent = errors.New("dataplane: keepalive not sent")

// SendKeepalive sends p a keepalive (an empty transport message, section 6.5) with its current
// keypair.
func (d *Device) SendKeepalive(p *Peer) error {
	if d.closing.Load() {
		return ErrDeviceClosed
	}
	d.ctlMu.Lock()
	d.ctlSizes[0], d.ctlPeers[0] = 0, p
	sent, err := d.ctlSend(1)
	d.ctlUnlock()
	if err == nil && sent == 0 {
		err = ErrNotSent
	}
	return err
}

// ctlUnlock releases ctlMu, then reports the events the control sends held back.
func (d *Device) ctlUnlock() {
	var held [MaxStaged]heldEvent
	n := copy(held[:], d.ctlEnc.held)
	d.ctlEnc.held = d.ctlEnc.held[:0]
	d.ctlMu.Unlock()
	for _, h := range held[:n] {
		d.peers.event(h.peer, h.ev)
	}
}

// tunReader reads packet batches from the TUN into free units and queues them for encryption.
func (d *Device) tunReader() {
	defer d.wg.Done()
	defer d.out.work.Close()
	burst := min(batch.MaxPackets, max(1, d.tun.BatchSize()))
	// While packets wait, more reads top the batch up (see TUNTryReader), as long as the buffers
	// left can take a super-packet: the TUN splits one into up to 64 KiB / MSS segments and drops it
	// if they do not fit (the MSS is at least the MTU less 100 bytes of IPv6 and TCP headers with
	// options).
	tun, ok := d.tun.(tunSource)
	if !ok {
		tun = polledTUN{d.tun, newTunPoller(d.tun)}
	}
	room := 65535/max(d.mtu-100, 1) + 1
	var u [1]*unit
	for seq := uint64(0); ; seq++ {
		if _, err := d.out.free.Dequeue(u[:]); err != nil || !d.take(u[0]) {
			return
		}
		for {
			n, err := tun.Read(u[0].bufs[:burst], u[0].sizes[:burst], tunOffset)
			for n > 0 && err == nil && burst-n >= room {
				var m int
				if m, err = tun.TryRead(u[0].bufs[n:burst], u[0].sizes[n:burst], tunOffset); m == 0 {
					break
				}
				n += m
			}
			if n > 0 {
				u[0].n = n
				break
			}
			if err != nil && (d.closing.Load() || errors.Is(err, os.ErrClosed)) {
				return
			}
			if err != nil && fatalReadError(err) {
				d.fail(fmt.Errorf("dataplane: reading the TUN: %w", err))
				return
			}
			// A transient error (such as a GSO packet split into more segments than fit, or
			// one whose offload header does not describe it) drops what was read; try again.
		}
		u[0].seq = seq
		if d.out.work.Enqueue(u[:]) != nil {
			return
		}
	}
}

// tunSource is how tunReader reads: a TUN that is a TUNTryReader, or one made so by polledTUN.
type tunSource interface {
	TUN
	TUNTryReader
}

// polledTUN reads more of a TUN only when a poll says packets wait (never without a poller).
type polledTUN struct {
	TUN
	poller *tunPoller
}

func (t polledTUN) TryRead(bufs [][]byte, sizes []int, offset int) (int, error) {
	if t.poller == nil || !t.poller.readable() {
		return 0, nil
	}
	return t.Read(bufs, sizes, offset)
}

func (d *Device) encryptWorker() {
	defer d.wg.Done()
	enc := NewEncrypter(d.peers, d.mtu)
	var u [1]*unit
	for {
		if _, err := d.out.work.Dequeue(u[:]); err != nil {
			return
		}
		enc.Encrypt(u[0].packets(tunOffset))
		d.out.commit.done(u[0])
	}
}

// send sends the sealed packets of b (its committer's step, with its release), stages those that
// wait for a handshake and sends the ones staged meanwhile.
func (d *Device) send(b *unit) {
	k := 0
	for i := range b.n {
		switch v := b.verdicts[i]; {
		case (v == VerdictNoKey || v == VerdictKeyExpired) && b.sizes[i] > 0:
			d.stagePacket(b.peers[i], b.bufs[i][tunOffset:tunOffset+b.sizes[i]])
		case v == VerdictOK:
			b.view[k] = b.bufs[i][udpOffset : udpOffset+b.sizes[i]]
			b.addrs[k] = b.addrs[i]
			b.from[k] = i
			k++
		}
	}
	if k > 0 {
		d.writeSealed(b, k)
	}
	d.sendLateStaged(b)
	clear(b.view[:k])
	clear(b.peers[:b.n])
}

// writeSealed sends the k datagrams of b.view and counts the ones the socket refused: on their
// peers (Stats.TxErrors) where the UDP reports which (UDPSendReporter), else as write errors.
func (d *Device) writeSealed(b *unit, k int) {
	if d.sendReporter == nil {
		if d.udp.WriteBatch(b.view[:k], b.addrs[:k]) != nil {
			d.writeErrors.Add(1)
		}
		return
	}
	// WriteBatchReport sets every entry of b.failed[:k], so no entry of an earlier batch remains.
	nfailed, _ := d.sendReporter.WriteBatchReport(b.view[:k], b.addrs[:k], b.failed[:k])
	if nfailed == 0 {
		return
	}
	d.writeErrors.Add(uint64(nfailed))
	for j := range k {
		if b.failed[j] {
			if p := b.peers[b.from[j]]; p != nil {
				p.stats.txErrors.Add(1)
			}
			d.peers.stats.txErrors.Add(1)
		}
	}
}

// udpReader reads datagram batches into free units, passes handshake messages to the control plane
// and queues transport messages for decryption.
func (d *Device) udpReader() {
	defer d.wg.Done()
	defer close(d.hs)
	defer d.in.work.Close()
	burst := min(batch.MaxPackets, max(1, d.udp.BatchSize()))
	into, _ := d.udp.(UDPBufferReader)
	var u [1]*unit
	for seq := uint64(0); ; seq++ {
		if _, err := d.in.free.Dequeue(u[:]); err != nil || !d.take(u[0]) {
			return
		}
		b := u[0]
		for {
			var n int
			var err error
			if into != nil {
				// The datagrams land in the buffers, which the read may reorder.
				n, err = into.ReadBuffers(b.bufs[:burst], udpOffset, b.sizes[:burst], b.addrs[:burst])
				for i := range n {
					b.view[i] = b.bufs[i][udpOffset:]
				}
			} else {
				for i := range burst {
					b.view[i] = b.bufs[i][udpOffset:]
				}
				n, err = d.udp.ReadBatch(b.view[:burst], b.sizes[:burst], b.addrs[:burst])
			}
			if n > 0 {
				b.n = d.divert(b, n)
			}
			if n > 0 && b.n > 0 {
				break
			}
			if err != nil && (d.closing.Load() || errors.Is(err, os.ErrClosed)) {
				return
			}
			if err != nil && fatalReadError(err) {
				d.fail(fmt.Errorf("dataplane: reading the UDP socket: %w", err))
				return
			}
		}
		b.seq = seq
		if d.in.work.Enqueue(u[:]) != nil {
			return
		}
	}
}

// divert takes the handshake messages out of the first n datagrams of b, queueing them for the
// control plane, and returns how many datagrams are left, compacted to the front in their order.
func (d *Device) divert(b *unit, n int) int {
	k := 0
	for i := range n {
		msg := b.view[i][:b.sizes[i]]
		if isHandshake(msg) {
			if d.cp == nil {
				d.handshakesDropped.Add(1) // nobody to give it to
				continue
			}
			m := handshakeMsg{src: b.addrs[i]}
			m.n = copy(m.buf[:], msg)
			select {
			case d.hs <- m:
				d.handshakes.Add(1)
			default:
				d.handshakesDropped.Add(1)
			}
			continue
		}
		if len(msg) == len(b.view[i]) {
			// It filled the buffer, so it may have been truncated: longer than any message a
			// peer within PeerMTU sends. Dropped as malformed.
			d.peers.stats.drops[VerdictMalformed].Add(1)
			continue
		}
		if i != k {
			b.bufs[i], b.bufs[k] = b.bufs[k], b.bufs[i]
			b.view[i], b.view[k] = b.view[k], b.view[i]
			b.sizes[k], b.addrs[k] = b.sizes[i], b.addrs[i]
		}
		k++
	}
	return k
}

func (d *Device) decryptWorker() {
	defer d.wg.Done()
	dec := NewDecrypter(d.peers)
	var u [1]*unit
	for {
		if _, err := d.in.work.Dequeue(u[:]); err != nil {
			return
		}
		dec.Decrypt(u[0].packets(udpOffset))
		d.in.commit.done(u[0])
	}
}

// write writes the opened packets of b to the TUN (its committer's step, with its release),
// coalesced where the TUN takes super-packets.
func (d *Device) write(b *unit) {
	k := 0
	for i := range b.n {
		if b.verdicts[i] == VerdictOK && b.sizes[i] > 0 { // keepalives stop here
			b.view[k] = b.bufs[i][:tunOffset+b.sizes[i]]
			k++
		}
	}
	failed := 0
	switch {
	case k == 0:
	case d.groWriter != nil:
		failed, _ = d.groWriter.WriteGRO(b.view[:k], tunOffset)
	default:
		failed = d.tunBatcher.write(d.tun, b.view[:k])
	}
	if failed > 0 {
		d.writeErrors.Add(uint64(failed))
	}
	clear(b.view[:k])
	clear(b.peers[:b.n])
}

// handshakeLoop hands queued handshake messages to the control plane, one at a time; the Device
// runs one per CPU.
func (d *Device) handshakeLoop() {
	defer d.wg.Done()
	for m := range d.hs {
		d.cp.HandleHandshake(m.buf[:m.n], m.src)
	}
}
