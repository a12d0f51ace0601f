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
// guest (a direct-streamlocal channel): the guest's sshd connects to it as
// the guest's user. A process whose commands go through the OpenSSH master
// has the master forward the socket, as its guest shells start there (a
// connection of its own would cost the guest a handshake); else, or when
// the master fails, it goes over the kept-open connection. A path where
// nothing listens is a refusal over a connection of ours, and a
// connection that ends at once through the master.
func (p *Pool) DialGuestSocket(ctx context.Context, instance, path string) (net.Conn, error) {
	c, err := p.connWithin(ctx, instance, redialFor, false)
	if err != nil {
		return nil, err
	}
	if f := p.masterForward(ctx, instance, c, path); f != nil {
		var d net.Dialer
		if conn, err := d.DialContext(ctx, "unix", f.local); err == nil || ctx.Err() != nil {
			return conn, err
		}
	}
	return p.dialOver(ctx, instance, "unix", path, "socket "+path)
}

// masterForward returns the master's forward of path for c, opening it
// once; nil when c has a client of ours (then that carries the socket) or
// no master, or the master refuses.
func (p *Pool) masterForward(ctx context.Context, instance string, c *conn, path string) *masterForward {
	p.mu.Lock()
	master, f, ours := c.master, c.forwards[path], c.client != nil
	p.mu.Unlock()
	if ours || master == "" { // a connection of ours carries it; a dead master's forward is not tried first
		return nil
	}
	if f != nil {
		return f
	}
	f, err := openMasterForward(ctx, master, path)
	if err != nil {
		return nil
	}
	p.mu.Lock()
	kept, dropped := c.forwards[path], p.conns[instance] != c
	if kept == nil && !dropped {
		if c.forwards == nil {
			c.forwards = map[string]*masterForward{}
		}
		c.forwards[path] = f
	}
	p.mu.Unlock()
	if kept != nil || dropped { // another call's, or c went (its forwards with it)
		f.cancel()
		return kept
	}
	return f
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
