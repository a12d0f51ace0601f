// Package loop is the reconcile loop: a controller with one queue entry per
// workspace (and one per workspace's pools) that hands due entries to
// bounded workers, retries failures with backoff and parks refusals until
// the configuration changes. It drives a Reconciler and knows nothing of
// the engine behind it, as controller-runtime's controllers know only
// their reconciler.
package loop

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/sandboxforge/sbf/internal/clock"
	"github.com/sandboxforge/sbf/spec"
)

// Pass is what the loop reads of a pass's result.
type Pass interface {
	// Wake is when the entry must run again at the latest: the earliest
	// lease end of a workspace pass, the first idle-out of a pool pass
	// (zero: none known).
	Wake() time.Time
	// DeclaresPools says whether the workspace declares pools, which then
	// converge in passes of their own.
	DeclaresPools() bool
}

// Reconciler is what the loop drives: one pass over a workspace (expire
// what ran out, repair drift, never renew a lease) and one over its pools.
// A nil Pass says the pass produced no result. An error that retrying
// cannot fix is marked with TerminalError.
type Reconciler interface {
	Reconcile(ctx context.Context, ws spec.Options) (Pass, error)
	ReconcilePools(ctx context.Context, ws spec.Options) (Pass, error)
}

// Options configure the loop.
type Options struct {
	// Workspaces lists what to converge; asked again on every wake-up, so
	// a server can add workspaces as tool calls touch them.
	Workspaces func() []spec.Options
	// Interval is the longest a workspace goes without a pass (default 1
	// minute).
	Interval time.Duration
	// Wake, when it receives, makes every workspace due (a lease was
	// created or extended and may end before its next pass).
	Wake <-chan struct{}
	// Adopted, when it receives, makes every pool pass due within
	// RefillDelay (a spare was taken: refill soon, not at the next interval).
	Adopted <-chan struct{}
	// RefillDelay is how long the refill after an adoption waits (default
	// DefaultRefillDelay; negative: none), so the adopter's first commands
	// do not share the host with a new spare's boot (under software
	// emulation a boot takes every core for minutes).
	RefillDelay time.Duration
	// Report hears each workspace pass; a pass that panicked reports a
	// *PassPanic, one cut short by PassTimeout an ErrPassTimeout.
	Report func(spec.Options, Pass, error)
	// PoolReport, when set, hears each pool pass.
	PoolReport func(spec.Options, Pass, error)
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
	// State, when set, hears the loop's own counts after every pass.
	State func(State)
	// Jitter spreads a retry's wait: it is given the backoff and returns
	// the wait (default: a random point in its second half), so workspaces
	// that failed together do not retry together.
	Jitter func(time.Duration) time.Duration
	// Clock is the loop's time (required: the engine's, so SBF_NOW and tests
	// decide when passes are due and time out).
	Clock clock.Clock
	// Asleep, when set, hears each time the loop waits: until when (zero:
	// until something happens) and with how many passes running. Tests
	// use it to know the loop is idle.
	Asleep func(until time.Time, running int)
}

// State is what the loop holds at a moment (its metrics).
type State struct {
	Entries    int // workspaces and pool passes it watches
	Running    int // passes running
	Parked     int // entries waiting for a refusal's input to change
	BackingOff int // entries whose last pass failed and are retried with backoff
}

// DefaultStopGrace leaves a minute of a 5-minute stop timeout for the
// state to be saved and the process to exit.
const DefaultStopGrace = 4 * time.Minute

// DefaultPassTimeout is long enough for the slowest legitimate pass: a
// Lima boot may take its whole start timeout (SBF_LIMA_START_TIMEOUT,
// 20 minutes by default; a software-emulated boot takes about 3), then
// the guest runtime, services and a compose build follow. A timeout that
// cut such a pass short would retry it forever; one hung pass only
// delays its own workspace, as other workspaces have other workers.
const DefaultPassTimeout = 30 * time.Minute

// DefaultRefillDelay is the refill's wait after an adoption: longer than an
// agent's create and first commands take (about a second from a spare),
// short beside a spare's boot (minutes under emulation).
const DefaultRefillDelay = 10 * time.Second

// firstBackoff is the wait after one failed pass; each further failure
// doubles it, up to MaxBackoff.
const firstBackoff = 5 * time.Second

// withDefaults fills what o leaves unset.
func (o Options) withDefaults() Options {
	if o.Workers <= 0 {
		o.Workers = 4
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = 5 * time.Minute
	}
	if o.Interval <= 0 {
		o.Interval = time.Minute
	}
	if o.PassTimeout <= 0 {
		o.PassTimeout = DefaultPassTimeout
	}
	if o.ParkedRecheck <= 0 {
		o.ParkedRecheck = 15 * time.Minute
	}
	if o.StopGrace <= 0 {
		o.StopGrace = DefaultStopGrace
	}
	switch {
	case o.RefillDelay == 0:
		o.RefillDelay = DefaultRefillDelay
	case o.RefillDelay < 0:
		o.RefillDelay = 0
	}
	if o.Jitter == nil {
		o.Jitter = equalJitter
	}
	return o
}

// equalJitter waits between half the backoff and all of it.
func equalJitter(d time.Duration) time.Duration {
	if d <= 1 {
		return d
	}
	return d/2 + rand.N(d/2)
}
