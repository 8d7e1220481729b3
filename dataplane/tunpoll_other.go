//go:build !linux

package dataplane

// tunPoller is Linux only: elsewhere a batch is what one TUN read returns.
type tunPoller struct{}

func newTunPoller(TUN) *tunPoller   { return nil }
func (p *tunPoller) readable() bool { return false }
