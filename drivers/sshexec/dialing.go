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
// before its banner for patience. A dial in flight is waited for: its
// connection is everyone's, and so is its failure, unless the dial ended
// for its caller's own reasons (its context), when a waiter dials itself.
func (p *Pool) clientWithin(ctx context.Context, instance string, patience time.Duration) (*ssh.Client, error) {
	for {
		p.mu.Lock()
		if c, ok := p.conns[instance]; ok {
			p.mu.Unlock()
			return c.client, nil
		}
		d, ok := p.dialing[instance]
		if !ok {
			d = &dialing{done: make(chan struct{})}
			p.dialing[instance] = d
			p.mu.Unlock()
			return p.dialFor(ctx, instance, patience, d)
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

// dialFor dials the instance for d's waiters and keeps the connection.
func (p *Pool) dialFor(ctx context.Context, instance string, patience time.Duration,
	d *dialing) (client *ssh.Client, err error) {
	defer func() { // deferred: a panicking Target must not leave waiters waiting for good
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.dialing[instance] == d {
			delete(p.dialing, instance)
		}
		switch {
		case err == nil && client == nil:
			err = errors.New("the dial ended without a connection")
		case err == nil && d.dropped:
			client.Close()
			client, err = nil, fmt.Errorf("the connection to %s was dropped while it was dialled", instance)
		case err == nil:
			p.conns[instance] = &conn{client: client}
		}
		d.err = err
		close(d.done)
	}()
	t, err := p.opts.Target(ctx, instance)
	if err != nil {
		return nil, err
	}
	client, err = dial(ctx, t, p.opts.Clock, patience)
	if err == nil {
		p.dials.Add(1)
	}
	return client, err
}

func isContextError(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}
