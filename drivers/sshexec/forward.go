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

var _ drivers.PortDialer = (*Pool)(nil)

// DialGuest opens a connection to 127.0.0.1:port inside the guest over
// the instance's kept-open SSH connection (a direct-tcpip channel, what
// `ssh -L` opens), redialling once if that connection died. A port where
// nothing listens is the guest sshd's refusal, not a reason to redial.
func (p *Pool) DialGuest(ctx context.Context, instance string, port int) (net.Conn, error) {
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	for attempt := 0; ; attempt++ {
		c, err := p.client(ctx, instance)
		if err != nil {
			return nil, err
		}
		conn, err := c.DialContext(ctx, "tcp", addr)
		var refused *ssh.OpenChannelError
		switch {
		case err == nil:
			return conn, nil
		case errors.As(err, &refused), ctx.Err() != nil:
			return nil, fmt.Errorf("connecting to port %d in %s: %w", port, instance, err)
		}
		p.Drop(instance)
		if attempt > 0 {
			return nil, fmt.Errorf("connecting to port %d in %s: %w", port, instance, err)
		}
	}
}
