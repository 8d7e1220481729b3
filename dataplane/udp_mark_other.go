//go:build !linux

package dataplane

// SetMark does nothing where the system has no SO_MARK (as wireguard-go's binds there).
func (c *UDPConn) SetMark(mark uint32) error { return nil }
