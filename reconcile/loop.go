package reconcile

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/sandboxforge/sbf/internal/clock"
	"github.com/sandboxforge/sbf/spec"
)

// WatchOptions configure the reconcile loop.
type WatchOptions struct {
	// Workspaces lists what to converge; asked again on every wake-up, so
	// a server can add workspaces as tool calls touch them.
	Workspaces func() []spec.Options
	// Interval is the longest a workspace goes without a pass (default 1
	// minute).
	Interval time.Duration
	// Wake, when it receives, makes every workspace due (a lease was
	// created or extended and may end before its next pass).
	Wake <-chan struct{}
	// Report hears each workspace pass; a pass that panicked reports a
	// *PassPanic, one cut short by PassTimeout an ErrPassTimeout.
	Report func(spec.Options, *Result, error)
	// PoolReport, when set, hears each pool pass.
	PoolReport func(spec.Options, *Result, error)
	// Workers bounds how many workspaces converge at once (default 4).
	Workers int
	// MaxBackoff caps the wait after failed passes (default 5 minutes).
	MaxBackoff time.Duration
	// PassTimeout bounds one pass (default DefaultPassTimeout): at its end
	// the pass's driver calls are cancelled and the workspace is retried
	// with backoff, so a hung backend command cannot hold a worker forever.
	PassTimeout time.Duration
	// ParkedRecheck is how long a workspace parked on a refusal waits for
	// its files to change before its pass runs anyway (default 15
	// minutes): a backend installed or a place freed on the host changes
	// no file of its own.
	ParkedRecheck time.Duration
	// StopGrace is how long a workspace pass may go on once the loop is
	// stopped (default DefaultStopGrace): within a service manager's stop
	// timeout (sbf's units give 5 minutes), so the pass is cancelled and
	// records what it did rather than being killed mid-step.
	StopGrace time.Duration
	// State, when set, hears the loop's own counts after every pass: how
	// many entries wait, run, are parked on a refusal or backing off (its
	// metrics).
	State func(LoopState)
	// Jitter spreads a retry's wait: it is given the backoff and returns
	// the wait (default: a random point in its second half), so workspaces
	// that failed together do not retry together.
	Jitter func(time.Duration) time.Duration
}

// LoopState is what the loop holds at a moment.
type LoopState struct {
	Entries    int // workspaces and pool passes it watches
	Running    int // passes running
	Parked     int // entries waiting for a refusal's input to change
	BackingOff int // entries whose last pass failed and are retried with backoff
}

// state counts the loop's entries.
func (c *controller) state() LoopState {
	st := LoopState{Entries: len(c.q.byKey), Running: c.running}
	for _, en := range c.q.byKey {
		switch {
		case en.parked != "":
			st.Parked++
		case en.failures > 0:
			st.BackingOff++
		}
	}
	return st
}

// DefaultStopGrace leaves a minute of a 5-minute stop timeout for the
// state to be saved and the process to exit.
const DefaultStopGrace = 4 * time.Minute

// equalJitter waits between half the backoff and all of it.
func equalJitter(d time.Duration) time.Duration {
	if d <= 1 {
		return d
	}
	return d/2 + rand.N(d/2)
}

// DefaultPassTimeout is long enough for the slowest legitimate pass: a
// Lima boot may take its whole start timeout (SBF_LIMA_START_TIMEOUT,
// 20 minutes by default; a software-emulated boot takes about 3), then
// the guest runtime, services and a compose build follow. A timeout that
// cut such a pass short would retry it forever; one hung pass only
// delays its own workspace, as other workspaces have other workers.
const DefaultPassTimeout = 30 * time.Minute

// firstBackoff is the wait after one failed pass; each further failure
// doubles it, up to MaxBackoff.
const firstBackoff = 5 * time.Second

// Watch is the reconcile loop of `sbf reconcile --watch`, `sbf serve` and
// the MCP server, a controller with one queue entry per workspace: each
// pass converges a workspace without renewing any lease (it expires what
// ran out and repairs drift), then requeues it at its earliest lease end
// or after Interval. Entries are handed out earliest due first, to
// bounded workers, so a slow boot in one workspace never delays an expiry
// in another. A failed pass is retried with exponential backoff (never
// later than the next known lease end), as is one that panicked or ran
// past PassTimeout; a terminal failure (an invalid configuration, see
// ErrTerminal) is not retried until its configuration files change.
//
// Each workspace's pools converge in a pass of their own (Engine.Pools),
// queued beside the workspace's: a refill that boots a VM never delays
// the workspace's expiries or a create, and an adoption makes the pool
// pass due at once. A pool pass also wakes when its first spare idles out.
//
// Cancelling ctx stops the loop; workspace passes already running finish
// their actions (within PassTimeout) and save their state first.
func (e *Engine) Watch(ctx context.Context, o WatchOptions) error {
	return e.watch(ctx, o, nil)
}

// watch is Watch; asleep, when set, hears each time the loop waits: until
// when (zero: until something happens) and with how many passes running.
func (e *Engine) watch(ctx context.Context, o WatchOptions, asleep func(until time.Time, running int)) error {
	adopted, stop := e.adoptions.subscribe()
	defer stop()
	c := &controller{e: e, r: e, o: o, q: newQueue(), done: make(chan passDone), adopted: adopted, asleep: asleep}
	if c.o.Workers <= 0 {
		c.o.Workers = 4
	}
	if c.o.MaxBackoff <= 0 {
		c.o.MaxBackoff = 5 * time.Minute
	}
	if c.o.Interval <= 0 {
		c.o.Interval = time.Minute
	}
	if c.o.PassTimeout <= 0 {
		c.o.PassTimeout = DefaultPassTimeout
	}
	if c.o.ParkedRecheck <= 0 {
		c.o.ParkedRecheck = 15 * time.Minute
	}
	if c.o.StopGrace <= 0 {
		c.o.StopGrace = DefaultStopGrace
	}
	if c.o.Jitter == nil {
		c.o.Jitter = equalJitter
	}
	return c.run(ctx)
}

// Reconciler is what the loop drives: one pass over a workspace (expire
// what ran out, repair drift, never renew a lease) and one over its pools.
// The Engine is one.
type Reconciler interface {
	Reconcile(ctx context.Context, ws spec.Options) (*Result, error)
	ReconcilePools(ctx context.Context, ws spec.Options) (*Result, error)
}

// Reconcile is one loop pass over a workspace.
func (e *Engine) Reconcile(ctx context.Context, ws spec.Options) (*Result, error) {
	return e.Apply(ctx, ws, Options{Intent: Reconcile{}, Audit: &Audit{Door: "loop", Tool: "reconcile"}})
}

// ReconcilePools is one loop pass over a workspace's pools.
func (e *Engine) ReconcilePools(ctx context.Context, ws spec.Options) (*Result, error) {
	return e.Apply(ctx, ws, Options{Intent: FillPools{}})
}

type controller struct {
	adopted <-chan struct{}
	r       Reconciler
	e       *Engine
	o       WatchOptions
	q       *queue
	running int
	done    chan passDone
	asleep  func(until time.Time, running int)
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

func (c *controller) run(ctx context.Context) error {
	for {
		c.refresh()
		c.dispatch(ctx)
		var fire <-chan time.Time
		var timer clock.Timer
		// With every worker busy only a finished pass can start another.
		next, ok := c.q.next()
		if ok && c.running < c.o.Workers {
			timer = c.e.Clock.NewTimer(next.due.Sub(c.now()))
			fire = timer.C()
		}
		if c.asleep != nil {
			var until time.Time
			if fire != nil {
				until = next.due
			}
			c.asleep(until, c.running)
		}
		select {
		case d := <-c.done:
			c.finish(d)
		case <-fire:
			c.waited = next.due
		case <-c.o.Wake:
			c.wake(func(*entry) bool { return true })
		case <-c.adopted:
			// A spare was taken (by this loop's pass, `sbf up`, an MCP
			// tool): refill now, not at the next interval.
			c.wake(func(en *entry) bool { return en.pools })
		case <-ctx.Done():
			if timer != nil {
				timer.Stop()
			}
			for c.running > 0 {
				c.finish(<-c.done)
			}
			return nil
		}
		if timer != nil {
			timer.Stop() // a wait cut short leaves no timer behind
		}
	}
}

// refresh adds new workspaces, due at once.
func (c *controller) refresh() {
	for _, ws := range c.o.Workspaces() {
		if pe, ok := c.q.byKey[poolKey(ws.Root)]; ok {
			pe.ws = ws
		}
		if en, ok := c.q.byKey[ws.Root]; ok {
			en.ws = ws
			continue
		}
		c.q.add(&entry{key: ws.Root, ws: ws, due: c.now()})
	}
}

// wake makes the chosen entries due at once (parked ones too); a running
// one runs again as soon as its pass ends, since what woke it may have
// come after its pass read the files.
func (c *controller) wake(chosen func(*entry) bool) {
	now := c.now()
	for _, en := range c.q.byKey {
		if !chosen(en) {
			continue
		}
		en.parked = ""
		if en.running() {
			en.dirty = true
			continue
		}
		c.q.schedule(en, now)
	}
}

// dispatch starts a pass for each due entry, earliest due first, as
// workers allow. A parked entry runs only if its files changed; if not,
// it is looked at again an Interval later.
func (c *controller) dispatch(ctx context.Context) {
	now := c.now()
	var unchanged []*entry
	for c.running < c.o.Workers {
		en, ok := c.q.next()
		if !ok || en.due.After(now) {
			break
		}
		c.q.take()
		if en.parked != "" {
			// Some refusals end without the files changing (a backend
			// installed, a place freed on the host): look again now and then.
			if fingerprint(en.ws) == en.parked && now.Before(en.parkedAt.Add(c.o.ParkedRecheck)) {
				unchanged = append(unchanged, en)
				continue
			}
			en.parked = ""
		}
		c.running++
		go func(key string, ws spec.Options, pools bool) {
			c.done <- c.pass(ctx, key, ws, pools)
		}(en.key, en.ws, en.pools)
	}
	for _, en := range unchanged {
		c.q.requeue(en, now.Add(c.o.Interval))
	}
}

// finish reports a pass and requeues its entry.
func (c *controller) finish(d passDone) {
	c.running--
	en := c.q.byKey[d.key]
	now := c.now()
	if en.pools {
		if c.o.PoolReport != nil {
			c.o.PoolReport(en.ws, d.pool, d.err)
		}
		if d.pool != nil {
			en.expiry = d.pool.NextIdleOut()
		}
	} else {
		if c.o.Report != nil {
			c.o.Report(en.ws, d.res, d.err)
		}
		if d.res != nil {
			en.expiry = d.res.NextExpiry
			c.queuePools(en.ws, d.res, now)
		}
	}
	due := c.nextPass(en, d.err, now)
	if en.dirty {
		en.dirty, en.parked, due = false, "", now
	}
	c.q.requeue(en, due)
	if c.o.State != nil {
		c.o.State(c.state())
	}
}

// queuePools gives a workspace that declares pools a pool entry of its own.
func (c *controller) queuePools(ws spec.Options, res *Result, now time.Time) {
	key := poolKey(ws.Root)
	if _, queued := c.q.byKey[key]; !queued && res.Resolved != nil && len(res.Resolved.Config.Pools) > 0 {
		c.q.add(&entry{key: key, ws: ws, pools: true, due: now})
	}
}

// nextPass says when an entry is due after a pass that ended with err.
func (c *controller) nextPass(en *entry, err error, now time.Time) time.Time {
	next := now.Add(c.o.Interval)
	switch {
	case err == nil:
		en.failures = 0
	case terminal(err):
		// Retrying cannot help until someone edits the files; they are
		// looked at again every Interval (or at a Wake), and the pass runs
		// anyway once it has been parked for ParkedRecheck.
		if en.parked == "" {
			en.parkedAt = now
		}
		en.parked = fingerprint(en.ws)
		return next
	default:
		en.failures++
		next = now.Add(c.o.Jitter(min(c.o.MaxBackoff, firstBackoff<<min(en.failures-1, 16))))
	}
	if !en.expiry.IsZero() && en.expiry.After(now) && en.expiry.Before(next) {
		next = en.expiry
	}
	return next
}
