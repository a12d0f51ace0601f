// Package sshexec runs commands in, and copies files to and from, VMs over
// one kept-open SSH connection per instance, whatever the backend: a
// driver says how to reach an instance (a Target) and what to do when SSH
// cannot be used (Fallbacks); the connection cache, keepalive, long-lived
// guest shell, exec limits and tar copy are shared.
package sshexec

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

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
	// ControlPath is the control socket of an OpenSSH master connected to
	// the instance, if one is kept (Lima keeps one): guest shells start
	// there until this process has a connection of its own (master.go).
	ControlPath string
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

// Pool keeps one SSH connection, and a few guest shells on it, per instance.
// Its zero value is not usable; call New.
type Pool struct {
	opts    Options
	mu      sync.Mutex
	conns   map[string]*conn
	dialing map[string]*dialing // the dial in flight per instance (dialing.go)
	dials   atomic.Int64
}

// Dials counts the SSH connections this pool opened: a kept connection
// serves every command after the first, which the e2e suite checks rather
// than a ratio of timings a loaded machine can break.
func (p *Pool) Dials() int64 { return p.dials.Load() }

// A driver delegates its capabilities to a Pool, so the Pool must keep
// their exact shape.
var (
	_ drivers.Connector = (*Pool)(nil)
	_ drivers.Copier    = (*Pool)(nil)
)

// conn is the way into a running instance: an open SSH client of ours, or
// an OpenSSH master's control socket until a client is needed, and the
// guest shells that run commands without stdin (started as commands need
// them).
type conn struct {
	client   *ssh.Client // nil until something needs a connection of ours
	master   string      // the master's control socket; "" once it failed
	shells   []*shell
	starting int                       // shells being started, counted against maxShells
	onMaster int                       // shells on the master's sessions, started or starting
	forwards map[string]*masterForward // by guest socket path, kept by the master for us
}

// maxShells bounds the guest shells kept per instance. A command that finds
// every shell busy starts another, so a loop pass's slow docker probes or
// an agent's long command do not send everyone else's commands to a new
// session each (~10× the cost under software emulation).
const maxShells = 4

// maxMasterShells bounds the shells a process starts on the master's
// sessions: sshd allows ten sessions per connection (MaxSessions), and
// `limactl shell` and other sbf processes share the master's. A process
// busy enough to want more connects itself.
const maxMasterShells = 2

// New returns an empty pool; connections are dialled on first use.
func New(o Options) *Pool {
	if o.Clock == nil {
		o.Clock = clock.Real{}
	}
	return &Pool{opts: o, conns: map[string]*conn{}, dialing: map[string]*dialing{}}
}

// client returns the instance's open SSH client, dialling it on first use.
func (p *Pool) client(ctx context.Context, instance string) (*ssh.Client, error) {
	return p.clientWithin(ctx, instance, redialFor)
}

// Drop closes an instance's connection (it is stopping or going away);
// the next command dials again.
func (p *Pool) Drop(instance string) {
	p.mu.Lock()
	c, ok := p.conns[instance]
	delete(p.conns, instance)
	if d := p.dialing[instance]; d != nil {
		d.dropped = true // what it connects to is the instance as it was
	}
	p.mu.Unlock()
	if ok {
		c.close()
	}
}

func (c *conn) close() {
	for _, sh := range c.shells {
		sh.close()
	}
	for _, f := range c.forwards {
		f.cancel()
	}
	if c.client != nil {
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
	if c.client == nil {
		return masterAlive(c.master)
	}
	_, _, err := c.client.SendRequest("keepalive@openssh.com", true, nil)
	return err == nil
}

// Close closes every connection.
func (p *Pool) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	for name, c := range p.conns {
		c.close()
		delete(p.conns, name)
	}
	for _, d := range p.dialing {
		d.dropped = true
	}
	return nil
}

// Connect dials the instance's connection now. Its guest has just come
// up: a dropped connection is tried again for longer than a command's.
func (p *Pool) Connect(ctx context.Context, instance string) error {
	_, err := p.clientWithin(ctx, instance, warmPatience)
	return err
}

// Warm starts a guest shell now (connecting first when no master serves
// the instance), so the instance's first command needs neither.
// A guest shell's start is not bounded by ctx (the SSH library's session
// requests take none): Warm returns when ctx ends and leaves the start to
// finish or fail on its own, so a loop's warm-up never hangs on a guest.
func (p *Pool) Warm(ctx context.Context, instance string) error {
	c, err := p.shellConn(ctx, instance, warmPatience)
	if err != nil {
		return err
	}
	started := make(chan error, 1)
	go func() {
		sh, err := p.freeShell(ctx, instance, c)
		if sh != nil {
			sh.mu.Unlock()
		}
		started <- err
	}()
	select {
	case err := <-started:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// shellConn returns the instance's way in for guest shells: the one kept,
// else the OpenSSH master its target names when that answers, else a
// connection of ours, dialled now (trying a guest that drops it early for
// patience).
func (p *Pool) shellConn(ctx context.Context, instance string, patience time.Duration) (*conn, error) {
	return p.connWithin(ctx, instance, patience, false)
}

// freeShell returns a guest shell on c that no command uses, locked for
// the caller: an idle one, else a new one while fewer than maxShells run;
// nil when every shell is busy.
func (p *Pool) freeShell(ctx context.Context, instance string, c *conn) (*shell, error) {
	p.mu.Lock()
	if p.conns[instance] != c {
		p.mu.Unlock()
		return nil, fmt.Errorf("connection to %s closed", instance)
	}
	for _, sh := range c.shells {
		if sh.mu.TryLock() {
			p.mu.Unlock()
			return sh, nil
		}
	}
	if len(c.shells)+c.starting >= maxShells {
		p.mu.Unlock()
		return nil, nil
	}
	c.starting++
	master := ""
	if c.master != "" && c.onMaster < maxMasterShells {
		master = c.master
		c.onMaster++
	}
	p.mu.Unlock()
	sh, err := p.startShell(ctx, instance, c, master) // a round trip: other instances' commands need not wait
	p.mu.Lock()
	defer p.mu.Unlock()
	c.starting--
	if master != "" && (err != nil || !sh.onMaster) {
		c.onMaster--
	}
	if err != nil {
		return nil, fmt.Errorf("starting a guest shell of %s: %w", instance, err)
	}
	sh.mu.Lock()
	if p.conns[instance] != c { // dropped meanwhile: the shell went with its connection
		sh.close()
		sh.mu.Unlock()
		return nil, fmt.Errorf("connection to %s closed", instance)
	}
	c.shells = append(c.shells, sh)
	return sh, nil
}

// startShell starts a guest shell through the master, or on a connection
// of ours once the master failed or when there is none.
func (p *Pool) startShell(ctx context.Context, instance string, c *conn, master string) (*shell, error) {
	if master != "" {
		sh, err := startMasterShell(ctx, master)
		if err == nil || ctx.Err() != nil {
			return sh, err
		}
		p.mu.Lock()
		c.master = "" // gone or refusing (the VM restarted, say): connect ourselves from now on
		p.mu.Unlock()
	}
	client, err := p.client(ctx, instance)
	if err != nil {
		return nil, err
	}
	return startShell(client)
}

// dropShell forgets a broken guest shell; a later command starts another.
func (p *Pool) dropShell(instance string, sh *shell) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if c, ok := p.conns[instance]; ok && slices.Contains(c.shells, sh) {
		c.shells = slices.DeleteFunc(c.shells, func(s *shell) bool { return s == sh })
		if sh.onMaster {
			c.onMaster--
		}
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
