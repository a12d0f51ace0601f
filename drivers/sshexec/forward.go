package sshexec

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"

	"golang.org/x/crypto/ssh"

	"github.com/sandboxforge/sbf/drivers"
)

var (
	_ drivers.PortDialer   = (*Pool)(nil)
	_ drivers.SocketDialer = (*Pool)(nil)
)

// DialGuest opens a connection to 127.0.0.1:port inside the guest over
// the instance's kept-open SSH connection (a direct-tcpip channel, what
// `ssh -L` opens).
func (p *Pool) DialGuest(ctx context.Context, instance string, port int) (net.Conn, error) {
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	return p.dialOver(ctx, instance, "tcp", addr, "port "+strconv.Itoa(port))
}

// DialGuestSocket opens a connection to the unix socket at path inside the
// guest over the kept-open SSH connection (a direct-streamlocal channel):
// the guest's sshd connects to it as the guest's user.
func (p *Pool) DialGuestSocket(ctx context.Context, instance, path string) (net.Conn, error) {
	return p.dialOver(ctx, instance, "unix", path, "socket "+path)
}

// dialOver opens a channel to addr over the instance's connection,
// redialling once if that connection died. An address where nothing
// listens is the guest sshd's refusal, not a reason to redial.
func (p *Pool) dialOver(ctx context.Context, instance, network, addr, what string) (net.Conn, error) {
	for attempt := 0; ; attempt++ {
		c, err := p.client(ctx, instance)
		if err != nil {
			return nil, err
		}
		conn, err := c.DialContext(ctx, network, addr)
		var refused *ssh.OpenChannelError
		switch {
		case err == nil:
			return conn, nil
		case errors.As(err, &refused), ctx.Err() != nil:
			return nil, fmt.Errorf("connecting to %s in %s: %w", what, instance, err)
		}
		p.Drop(instance)
		if attempt > 0 {
			return nil, fmt.Errorf("connecting to %s in %s: %w", what, instance, err)
		}
	}
}
