package sshexec

import (
	"context"
	"errors"
	"fmt"
	"time"

	"golang.org/x/crypto/ssh"
)

// dialing is a dial in flight to one instance. Callers who find it wait
// for its outcome rather than open a second connection (a loop warming a
// spare while a create adopts it: a handshake with an emulated guest
// takes about a second).
type dialing struct {
	done    chan struct{}
	err     error // the dial's, once done
	dropped bool  // Drop or Close came meanwhile: the connection is closed, not kept
}

// clientWithin is client, trying a guest that drops the connection
// before its banner for patience.
func (p *Pool) clientWithin(ctx context.Context, instance string, patience time.Duration) (*ssh.Client, error) {
	c, err := p.connWithin(ctx, instance, patience, true)
	if err != nil {
		return nil, err
	}
	return c.client, nil
}

// connWithin returns the instance's way in: with a client of ours when
// needClient, else the OpenSSH master its target names will do. A dial in
// flight is waited for: its connection is everyone's, and so is its
// failure, unless the dial ended for its caller's own reasons (its
// context), when a waiter dials itself.
func (p *Pool) connWithin(ctx context.Context, instance string, patience time.Duration,
	needClient bool) (*conn, error) {
	for {
		p.mu.Lock()
		if c, ok := p.conns[instance]; ok && (c.client != nil || !needClient) {
			p.mu.Unlock()
			return c, nil
		}
		d, ok := p.dialing[instance]
		if !ok {
			d = &dialing{done: make(chan struct{})}
			p.dialing[instance] = d
			p.mu.Unlock()
			return p.dialFor(ctx, instance, patience, d, needClient)
		}
		p.mu.Unlock()
		select {
		case <-d.done:
			if d.err != nil && !isContextError(d.err) {
				return nil, d.err
			}
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// dialFor dials the instance for d's waiters and keeps the connection;
// unless needClient, a master that answers is kept instead.
func (p *Pool) dialFor(ctx context.Context, instance string, patience time.Duration,
	d *dialing, needClient bool) (c *conn, err error) {
	var client *ssh.Client
	var master string
	defer func() { // deferred: a panicking Target must not leave waiters waiting for good
		c, err = p.dialed(instance, d, client, master, err)
	}()
	t, err := p.opts.Target(ctx, instance)
	if err != nil {
		return nil, err
	}
	if !needClient && masterAlive(t.ControlPath) {
		master = t.ControlPath
		return nil, nil
	}
	client, err = dial(ctx, t, p.opts.Clock, patience)
	if err == nil {
		p.dials.Add(1)
	}
	return nil, err
}

// dialed keeps what a dial found, for d's waiters too.
func (p *Pool) dialed(instance string, d *dialing, client *ssh.Client, master string, err error) (*conn, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.dialing[instance] == d {
		delete(p.dialing, instance)
	}
	c := p.conns[instance]
	switch {
	case err == nil && client == nil && master == "":
		err = errors.New("the dial ended without a connection")
	case err == nil && d.dropped:
		if client != nil {
			client.Close()
		}
		err = fmt.Errorf("the connection to %s was dropped while it was dialled", instance)
	case err == nil && c != nil && client != nil: // its shells ran through a master so far
		c.client = client
	case err == nil && c == nil:
		c = &conn{client: client, master: master}
		p.conns[instance] = c
	}
	d.err = err
	close(d.done)
	if err != nil {
		return nil, err
	}
	return c, nil
}

func isContextError(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}
