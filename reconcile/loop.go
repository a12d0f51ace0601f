package reconcile

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/sandboxforge/sbf/internal/coded"
	"github.com/sandboxforge/sbf/spec"
)

// WatchOptions configure the reconcile loop.
type WatchOptions struct {
	// Workspaces lists what to converge; asked again on every wake-up, so
	// a server can add workspaces as tool calls touch them.
	Workspaces func() []spec.Options
	// Interval is the longest a workspace goes without a pass.
	Interval time.Duration
	// Wake, when it receives, makes every workspace due (a lease was
	// created or extended and may end before its next pass).
	Wake   <-chan struct{}
	Report func(spec.Options, *Result, error)
	// PoolReport, when set, hears each pool pass.
	PoolReport func(spec.Options, *Result, error)
	// Workers bounds how many workspaces converge at once (default 4).
	Workers int
	// MaxBackoff caps the wait after failed passes (default 5 minutes).
	MaxBackoff time.Duration
}

// firstBackoff is the wait after one failed pass; each further failure
// doubles it, up to MaxBackoff.
const firstBackoff = 5 * time.Second

// Watch is the reconcile loop of `sbf reconcile --watch`, `sbf serve` and
// the MCP server, a controller with one queue entry per workspace: each
// pass converges a workspace without renewing any lease (it expires what
// ran out and repairs drift), then requeues it at its earliest lease end
// or after Interval. Workspaces converge on bounded workers, so a slow
// boot in one never delays an expiry in another. A failed pass is retried
// with exponential backoff (never later than the next known lease end); an
// invalid configuration is not retried until its files change.
//
// Each workspace's pools converge in a pass of their own (Engine.Pools),
// queued beside the workspace's: a refill that boots a VM never delays
// the workspace's expiries or a create, and an adoption makes the pool
// pass due at once. A pool pass also wakes when its first spare idles out.
//
// Cancelling ctx stops the loop; passes already running finish their
// actions and save their state first.
func (e *Engine) Watch(ctx context.Context, o WatchOptions) error {
	adopted, stop := e.adoptions.subscribe()
	defer stop()
	c := &controller{e: e, o: o, queue: map[string]*entry{}, done: make(chan passDone), adopted: adopted}
	if c.o.Workers <= 0 {
		c.o.Workers = 4
	}
	if c.o.MaxBackoff <= 0 {
		c.o.MaxBackoff = 5 * time.Minute
	}
	return c.run(ctx)
}

type controller struct {
	adopted <-chan struct{}
	e       *Engine
	o       WatchOptions
	queue   map[string]*entry // by workspace root
	running int
	done    chan passDone
	// waited is the instant the loop last slept until: a clock pinned by
	// SBF_NOW never passes it, yet the wait is over.
	waited time.Time
}

// now is the clock's time, or the end of the last wait if later.
func (c *controller) now() time.Time {
	if t := c.e.Clock.Now(); t.After(c.waited) {
		return t
	}
	return c.waited
}

// entry is one workspace's place in the queue, or its pools' (pools).
type entry struct {
	ws       spec.Options
	pools    bool
	due      time.Time
	busy     bool
	failures int
	expiry   time.Time // the earliest lease end the last pass saw
	// invalid holds the configuration files' fingerprint while the
	// workspace waits for them to change.
	invalid string
}

type passDone struct {
	key  string
	res  *Result
	pool *Result
	err  error
}

// poolKey is the queue key of a workspace's pool passes.
func poolKey(root string) string { return "pools\x00" + root }

func (c *controller) run(ctx context.Context) error {
	for {
		c.refresh()
		c.dispatch(ctx)
		var timer <-chan time.Time
		next, ok := c.nextDue()
		if ok {
			timer = c.e.Clock.After(next.Sub(c.now()))
		}
		select {
		case d := <-c.done:
			c.finish(d)
		case <-timer:
			c.waited = next
		case <-c.o.Wake:
			for _, en := range c.queue {
				en.due, en.invalid = c.now(), ""
			}
		case <-c.adopted:
			// A spare was taken (by this loop's pass, `sbf up`, an MCP
			// tool): refill now, not at the next interval.
			for _, en := range c.queue {
				if en.pools {
					en.due = c.now()
				}
			}
		case <-ctx.Done():
			for c.running > 0 {
				c.finish(<-c.done)
			}
			return nil
		}
	}
}

// refresh adds new workspaces (due at once) and wakes invalid ones whose
// files changed.
func (c *controller) refresh() {
	now := c.now()
	for _, ws := range c.o.Workspaces() {
		if pe, ok := c.queue[poolKey(ws.Root)]; ok {
			pe.ws = ws
		}
		key := ws.Root
		en, ok := c.queue[key]
		if !ok {
			c.queue[key] = &entry{ws: ws, due: now}
			continue
		}
		en.ws = ws
		if en.invalid == "" || en.busy || now.Before(en.due) {
			continue
		}
		if fingerprint(key) != en.invalid {
			en.invalid, en.due = "", now
		} else {
			en.due = now.Add(c.o.Interval) // look at the files again then
		}
	}
}

// dispatch starts a pass for every due workspace, as workers allow.
func (c *controller) dispatch(ctx context.Context) {
	now := c.now()
	for key, en := range c.queue {
		if c.running >= c.o.Workers {
			return
		}
		if en.busy || en.invalid != "" || now.Before(en.due) {
			continue
		}
		en.busy = true
		c.running++
		go func(key string, ws spec.Options, pools bool) {
			if pools {
				// Unlike a workspace's pass, a refill stops with the loop: a
				// spare cut off mid-boot is deleted (now, or by the next pass),
				// and nobody waits minutes for a VM nobody asked for yet.
				res, err := c.e.Apply(ctx, ws, Options{Request: Request{Op: FillPools}})
				c.done <- passDone{key: key, pool: res, err: err}
				return
			}
			res, err := c.e.Apply(context.WithoutCancel(ctx), ws, Options{})
			c.done <- passDone{key: key, res: res, err: err}
		}(key, en.ws, en.pools)
	}
}

// finish requeues a workspace after its pass.
func (c *controller) finish(d passDone) {
	c.running--
	en := c.queue[d.key]
	en.busy = false
	now := c.now()
	switch {
	case en.pools:
		if c.o.PoolReport != nil {
			c.o.PoolReport(en.ws, d.pool, d.err)
		}
		if d.pool != nil {
			en.expiry = d.pool.NextIdleOut()
		}
	default:
		if c.o.Report != nil {
			c.o.Report(en.ws, d.res, d.err)
		}
		if d.res != nil {
			en.expiry = d.res.NextExpiry
			_, queued := c.queue[poolKey(en.ws.Root)]
			if !queued && d.res.Resolved != nil && len(d.res.Resolved.Config.Pools) > 0 {
				// The workspace declares pools: they get passes of their own.
				c.queue[poolKey(en.ws.Root)] = &entry{ws: en.ws, due: now, pools: true}
			}
		}
	}
	next := now.Add(c.o.Interval)
	switch {
	case d.err == nil:
		en.failures = 0
	case coded.Of(d.err, coded.Unknown).Code == coded.ConfigInvalid && !en.pools:
		// Retrying cannot help until someone edits the files; they are
		// looked at again every Interval (or at a Wake).
		en.invalid = fingerprint(d.key)
		en.due = now.Add(c.o.Interval)
		return
	default:
		en.failures++
		next = now.Add(min(c.o.MaxBackoff, firstBackoff<<min(en.failures-1, 16)))
	}
	if !en.expiry.IsZero() && en.expiry.After(now) && en.expiry.Before(next) {
		next = en.expiry
	}
	en.due = next
}

func (c *controller) nextDue() (time.Time, bool) {
	var next time.Time
	for _, en := range c.queue {
		if en.busy {
			continue
		}
		if next.IsZero() || en.due.Before(next) {
			next = en.due
		}
	}
	return next, !next.IsZero()
}

// fingerprint identifies the state of a workspace's configuration files
// (sizes and modification times), so an edit wakes its queue entry.
func fingerprint(root string) string {
	var b strings.Builder
	for _, name := range []string{spec.FileName, ".orbitforge.toml", ".lima-mcp.toml", spec.LocalFileName,
		filepath.Join(spec.Dir, spec.OverridesFile)} {
		if info, err := os.Stat(filepath.Join(root, name)); err == nil {
			fmt.Fprintf(&b, "%s:%d:%d;", name, info.Size(), info.ModTime().UnixNano())
		}
	}
	return "files:" + b.String()
}
