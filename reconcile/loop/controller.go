package loop

import (
	"context"
	"time"

	"github.com/sandboxforge/sbf/internal/clock"
	"github.com/sandboxforge/sbf/spec"
)

// Run is the loop of `sbf reconcile --watch`, `sbf serve` and the MCP
// server: each pass converges a workspace through r, then requeues it at
// its Wake or after Interval. Entries are handed out earliest due first,
// to bounded workers, so a slow boot in one workspace never delays an
// expiry in another. A failed pass is retried with exponential backoff
// (never later than the next known Wake), as is one that panicked or ran
// past PassTimeout; a terminal failure (ErrTerminal) is not retried until
// the workspace's configuration files change.
//
// A workspace whose pass DeclaresPools gets a pool entry of its own: a
// refill that boots a VM never delays the workspace's expiries, and
// Adopted makes the pool passes due at once.
//
// Cancelling ctx stops the loop; workspace passes already running finish
// their actions (within StopGrace) and save their state first.
func Run(ctx context.Context, r Reconciler, o Options) error {
	c := &controller{r: r, o: o.withDefaults(), q: newQueue(), done: make(chan passDone)}
	return c.run(ctx)
}

type controller struct {
	r       Reconciler
	o       Options
	q       *queue
	running int
	done    chan passDone
	// waited is the instant the loop last slept until: a clock pinned by
	// SBF_NOW never passes it, yet the wait is over.
	waited time.Time
	// refillAfter is when pool passes may refill after the last adoption
	// (RefillDelay after it), for pool entries queued after it too.
	refillAfter time.Time
}

// now is the clock's time, or the end of the last wait if later.
func (c *controller) now() time.Time {
	if t := c.o.Clock.Now(); t.After(c.waited) {
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
			timer = c.o.Clock.NewTimer(next.due.Sub(c.now()))
			fire = timer.C()
		}
		if c.o.Asleep != nil {
			var until time.Time
			if fire != nil {
				until = next.due
			}
			c.o.Asleep(until, c.running)
		}
		select {
		case d := <-c.done:
			c.finish(d)
		case <-fire:
			c.waited = next.due
		case <-c.o.Wake:
			c.wake(func(*entry) bool { return true }, 0)
		case <-c.o.Adopted:
			c.refillAfter = c.now().Add(c.o.RefillDelay)
			c.wake(func(en *entry) bool { return en.pools }, c.o.RefillDelay)
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

// wake makes the chosen entries due within that long (0: at once; parked
// ones too); a running one runs again as soon as its pass ends, since what
// woke it may have come after its pass read the files.
func (c *controller) wake(chosen func(*entry) bool, within time.Duration) {
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
		due := now.Add(within)
		if en.due.Before(due) && within > 0 {
			due = en.due // due sooner anyway
		}
		c.q.schedule(en, due)
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
	report := c.o.Report
	if en.pools {
		report = c.o.PoolReport
	}
	if report != nil {
		report(en.ws, d.pass, d.err)
	}
	if d.pass != nil {
		en.expiry = d.pass.Wake()
		if !en.pools && d.pass.DeclaresPools() {
			c.queuePools(en.ws, now)
		}
	}
	due := c.nextPass(en, d.err, now)
	if en.dirty {
		en.dirty, en.parked, due = false, "", now
		if en.pools { // woken by an adoption while it ran: the refill waits all the same
			due = latest(now, c.refillAfter)
		}
	}
	c.q.requeue(en, due)
	if c.o.State != nil {
		c.o.State(c.state())
	}
}

// queuePools gives a workspace that declares pools a pool entry of its own,
// due at once unless an adoption's refill delay runs (a door that adopted a
// spare names its workspace to the loop only afterwards).
func (c *controller) queuePools(ws spec.Options, now time.Time) {
	if key := poolKey(ws.Root); c.q.byKey[key] == nil {
		c.q.add(&entry{key: key, ws: ws, pools: true, due: latest(now, c.refillAfter)})
	}
}

func latest(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
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

// state counts the loop's entries.
func (c *controller) state() State {
	st := State{Entries: len(c.q.byKey), Running: c.running}
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
