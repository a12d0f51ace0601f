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

// SocketDialer opens connections to a unix socket inside a running
// instance, as `ssh -L local:/guest/path` does (OpenSSH's streamlocal
// channel): sshd connects as the guest's user, with that user's rights.
// The loop's cheap look asks the guest's dockerd through it rather than
// starting the docker CLI in the guest.
type SocketDialer interface {
	DialGuestSocket(ctx context.Context, instance, path string) (net.Conn, error)
}
