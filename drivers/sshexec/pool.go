// Package sshexec runs commands in, and copies files to and from, VMs over
// one kept-open SSH connection per instance, whatever the backend: a
// driver says how to reach an instance (a Target) and what to do when SSH
// cannot be used (Fallbacks); the connection cache, keepalive, long-lived
// guest shell, exec limits and tar copy are shared.
package sshexec

import (
	"context"
	"fmt"
	"sync"

	"golang.org/x/crypto/ssh"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/internal/clock"
)

// Target is how to reach an instance's sshd, as an ssh_config says it.
type Target struct {
	Host          string
	Port          string
	User          string
	IdentityFiles []string // private keys; unreadable or unparsable ones are skipped
}

// Fallbacks are a driver's other ways into a guest, used when SSH cannot
// be (no running instance, no key, no answer); sshErr says why, so the
// driver can report it its own way. A nil fallback returns sshErr.
type Fallbacks struct {
	Exec   func(ctx context.Context, instance string, req drivers.ExecRequest, sshErr error) (drivers.ExecResult, error)
	CopyIn func(ctx context.Context, instance, localPath, remotePath string, sshErr error) error
}

// Options configure a Pool.
type Options struct {
	// Target finds how to reach an instance; it is asked each time a
	// connection is dialled, so a restarted VM's new port is picked up.
	Target    func(ctx context.Context, instance string) (Target, error)
	Fallbacks Fallbacks
	Clock     clock.Clock // measures command durations; default the wall clock
}

// Pool keeps one SSH connection, and one guest shell on it, per instance.
// Its zero value is not usable; call New.
type Pool struct {
	opts  Options
	mu    sync.Mutex
	conns map[string]*conn
}

// A driver delegates its capabilities to a Pool, so the Pool must keep
// their exact shape.
var (
	_ drivers.Connector = (*Pool)(nil)
	_ drivers.Copier    = (*Pool)(nil)
)

// conn is one open SSH client to a running instance, and the guest shell
// that runs commands without stdin on it (nil until first needed).
type conn struct {
	client *ssh.Client
	shell  *shell
}

// New returns an empty pool; connections are dialled on first use.
func New(o Options) *Pool {
	if o.Clock == nil {
		o.Clock = clock.Real{}
	}
	return &Pool{opts: o, conns: map[string]*conn{}}
}

// client returns the instance's open SSH client, dialling it on first use.
func (p *Pool) client(ctx context.Context, instance string) (*ssh.Client, error) {
	p.mu.Lock()
	c, ok := p.conns[instance]
	p.mu.Unlock()
	if ok {
		return c.client, nil
	}
	t, err := p.opts.Target(ctx, instance)
	if err != nil {
		return nil, err
	}
	client, err := dial(ctx, t, p.opts.Clock)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if existing, ok := p.conns[instance]; ok { // another goroutine won the race
		client.Close()
		return existing.client, nil
	}
	p.conns[instance] = &conn{client: client}
	return client, nil
}

// Drop closes an instance's connection (it is stopping or going away);
// the next command dials again.
func (p *Pool) Drop(instance string) {
	p.mu.Lock()
	c, ok := p.conns[instance]
	delete(p.conns, instance)
	p.mu.Unlock()
	if ok {
		if c.shell != nil {
			c.shell.close()
		}
		c.client.Close()
	}
}

// Alive reports whether the instance's SSH connection is open and answers.
// It never dials: a broker uses it to notice its VM went away.
func (p *Pool) Alive(instance string) bool {
	p.mu.Lock()
	c, ok := p.conns[instance]
	p.mu.Unlock()
	if !ok {
		return false
	}
	_, _, err := c.client.SendRequest("keepalive@openssh.com", true, nil)
	return err == nil
}

// Close closes every connection.
func (p *Pool) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	for name, c := range p.conns {
		c.client.Close()
		delete(p.conns, name)
	}
	return nil
}

// Warm dials the instance's connection and starts its guest shell now,
// so its first command needs neither.
func (p *Pool) Warm(ctx context.Context, instance string) error {
	_, err := p.shellFor(ctx, instance)
	return err
}

// shellFor returns the instance's guest shell, starting it on first use.
func (p *Pool) shellFor(ctx context.Context, instance string) (*shell, error) {
	client, err := p.client(ctx, instance)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	c, ok := p.conns[instance]
	if !ok || c.client != client {
		return nil, fmt.Errorf("connection to %s closed", instance)
	}
	if c.shell == nil {
		if c.shell, err = startShell(client); err != nil {
			return nil, fmt.Errorf("starting the guest shell of %s: %w", instance, err)
		}
	}
	return c.shell, nil
}

// dropShell forgets a broken guest shell; the next command starts another.
func (p *Pool) dropShell(instance string, sh *shell) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if c, ok := p.conns[instance]; ok && c.shell == sh {
		c.shell = nil
	}
	sh.close()
}

// session opens a session, redialling once if the cached connection died.
func (p *Pool) session(ctx context.Context, instance string) (*ssh.Session, error) {
	for attempt := 0; ; attempt++ {
		c, err := p.client(ctx, instance)
		if err != nil {
			return nil, err
		}
		s, err := c.NewSession()
		if err == nil {
			return s, nil
		}
		p.Drop(instance)
		if attempt > 0 {
			return nil, fmt.Errorf("opening an SSH session to %s: %w", instance, err)
		}
	}
}
