package drivers

import (
	"context"
	"net"
)

// PortDialer opens TCP connections to a port on a running instance's own
// loopback, as `ssh -L` does: what forwards a guest port to the host
// uses. Nothing listens on the host's side here; the engine does that,
// on loopback only.
type PortDialer interface {
	DialGuest(ctx context.Context, instance string, port int) (net.Conn, error)
}
