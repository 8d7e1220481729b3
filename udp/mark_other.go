//go:build !linux

package udp

// SetMark does nothing where the system has no SO_MARK (as wireguard-go's binds there).
func (c *Conn) SetMark(mark uint32) error { return nil }
