//go:build !linux

package dataplane

// offloadTUN returns t: TUNs with virtio-net headers (package tunvnet) are Linux's.
func offloadTUN(t TUN) TUN { return t }

// tunPoller is Linux only: elsewhere a batch is what one TUN read returns.
type tunPoller struct{}

func newTunPoller(TUN) *tunPoller   { return nil }
func (p *tunPoller) readable() bool { return false }
