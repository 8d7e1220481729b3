//go:build !linux

package dataplane

// vnetTUN is Linux only: elsewhere the TUN does its own offloads, if any.
type vnetTUN struct{ udpGSO bool }

func newVnetTUN(TUN) *vnetTUN { return nil }

func (v *vnetTUN) Read(bufs [][]byte, sizes []int, offset int) (int, error)     { return 0, nil }
func (v *vnetTUN) writev(iov [][]byte) error                                    { return nil }
func (v *vnetTUN) readMore(bufs [][]byte, sizes []int, offset int) (int, error) { return 0, nil }
