package reconcile

import (
	"context"
	"errors"
	"time"

	"github.com/sandboxforge/sbf/internal/coded"
	"github.com/sandboxforge/sbf/reconcile/loop"
	"github.com/sandboxforge/sbf/spec"
)

// WatchOptions configure the reconcile loop (reconcile/loop.Options, with
// the engine's results in its reports).
type WatchOptions struct {
	// Workspaces are the workspaces a door named or touched, asked before
	// each pass.
	Workspaces func() []spec.Options
	// Leased, when set, adds every workspace the host index holds a live
	// lease for (so leases taken before the loop started, or by another
	// process while it runs, still end), each made into the options a pass
	// reads it with (false: left out); the loop then wakes when a lease is
	// taken, renewed or dropped.
	Leased        func(root string) (spec.Options, bool)
	Interval      time.Duration
	Wake          <-chan struct{}
	Report        func(spec.Options, *Result, error) // hears each workspace pass
	PoolReport    func(spec.Options, *Result, error) // hears each pool pass
	Workers       int
	MaxBackoff    time.Duration
	PassTimeout   time.Duration
	ParkedRecheck time.Duration
	StopGrace     time.Duration
	RefillDelay   time.Duration // see loop.Options.RefillDelay
	State         func(LoopState)
	Jitter        func(time.Duration) time.Duration
}

// LoopState is what the loop holds at a moment.
type LoopState = loop.State

// The loop's defaults, and the errors its reports carry.
const (
	DefaultPassTimeout = loop.DefaultPassTimeout
	DefaultStopGrace   = loop.DefaultStopGrace
)

var (
	ErrTerminal    = loop.ErrTerminal
	ErrPassTimeout = loop.ErrPassTimeout
	ErrStopGrace   = loop.ErrStopGrace
)

// PassPanic is a pass that panicked (see loop.PassPanic).
type PassPanic = loop.PassPanic

// Watch runs the reconcile loop (reconcile/loop) over the engine: each
// pass converges a workspace without renewing any lease (it expires what
// ran out and repairs drift), its pools in passes of their own that an
// adoption makes due at once. Refusals (an invalid configuration, a
// missing backend, a full host) park the workspace until its files change.
func (e *Engine) Watch(ctx context.Context, o WatchOptions) error {
	return e.watch(ctx, o, nil)
}

// watch is Watch; asleep, when set, hears each time the loop waits.
func (e *Engine) watch(ctx context.Context, o WatchOptions, asleep func(until time.Time, running int)) error {
	adopted, stop := e.adoptions.subscribe()
	defer stop()
	wake := o.Wake
	if o.Leased != nil {
		ctx, cancel := context.WithCancel(ctx)
		woken := make(chan struct{}, 1)
		done := make(chan struct{})
		go func() { defer close(done); e.wakeOnLeases(ctx, o.Wake, woken, leasePoll) }()
		defer func() { cancel(); <-done }()
		wake = woken
	}
	return loop.Run(ctx, engineReconciler{e}, loop.Options{
		Workspaces: func() []spec.Options { return e.Watched(o) }, Interval: o.Interval, Wake: wake, Adopted: adopted,
		Report: reportTo(o.Report), PoolReport: reportTo(o.PoolReport), Workers: o.Workers,
		MaxBackoff: o.MaxBackoff, PassTimeout: o.PassTimeout, ParkedRecheck: o.ParkedRecheck,
		StopGrace: o.StopGrace, RefillDelay: o.RefillDelay, State: o.State, Jitter: o.Jitter, Clock: e.Clock, Asleep: asleep,
	})
}

// reportTo hands a door's report the engine's result of a pass.
func reportTo(report func(spec.Options, *Result, error)) func(spec.Options, loop.Pass, error) {
	if report == nil {
		return nil
	}
	return func(ws spec.Options, p loop.Pass, err error) {
		var res *Result
		if p != nil {
			res = p.(pass).res
		}
		report(ws, res, err)
	}
}

// Reconcile is one loop pass over a workspace.
func (e *Engine) Reconcile(ctx context.Context, ws spec.Options) (*Result, error) {
	return e.Apply(ctx, ws, Options{Intent: Reconcile{}, Audit: &Audit{Door: "loop", Tool: "reconcile"}})
}

// ReconcilePools is one loop pass over a workspace's pools.
func (e *Engine) ReconcilePools(ctx context.Context, ws spec.Options) (*Result, error) {
	return e.Apply(ctx, ws, Options{Intent: FillPools{}})
}

// engineReconciler is the loop's view of the engine: passes, with the
// errors retrying cannot fix marked terminal.
type engineReconciler struct{ e *Engine }

func (r engineReconciler) Reconcile(ctx context.Context, ws spec.Options) (loop.Pass, error) {
	res, err := r.e.Reconcile(ctx, ws)
	return passOf(res, false), markTerminal(err)
}

func (r engineReconciler) ReconcilePools(ctx context.Context, ws spec.Options) (loop.Pass, error) {
	res, err := r.e.ReconcilePools(ctx, ws)
	r.e.warmSpares(ctx, res) // a loop runs for long: its spares are connected ahead of their adoption
	return passOf(res, true), markTerminal(err)
}

// pass is a Result as the loop reads it.
type pass struct {
	res   *Result
	pools bool
}

func passOf(res *Result, pools bool) loop.Pass {
	if res == nil {
		return nil
	}
	return pass{res, pools}
}

// Wake is a pool pass's first idle-out, a workspace pass's first lease end.
func (p pass) Wake() time.Time {
	if p.pools {
		return p.res.NextIdleOut()
	}
	return p.res.NextExpiry
}

func (p pass) DeclaresPools() bool {
	return p.res.Resolved != nil && len(p.res.Resolved.Config.Pools) > 0
}

// refusals are the coded errors retrying does not fix by itself: the
// configuration, the host's capacity or a backend's presence must change
// first, so the loop parks the workspace instead of retrying it.
var refusals = map[string]bool{coded.ConfigInvalid: true, coded.BackendUnavailable: true,
	coded.InstanceLimit: true, coded.PolicyUnsupported: true, "INSUFFICIENT_HOST_RESOURCES": true}

// markTerminal marks err terminal for the loop when retrying cannot fix it.
func markTerminal(err error) error {
	if terminal(err) && !errors.Is(err, loop.ErrTerminal) {
		return loop.TerminalError(err)
	}
	return err
}

// terminal says whether retrying err at once cannot help: it is marked
// so, the configuration is invalid, or every failure it joins is a refusal.
func terminal(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, loop.ErrTerminal) || errors.Is(err, spec.ErrInvalid) {
		return true
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			if !terminal(e) {
				return false
			}
		}
		return len(j.Unwrap()) > 0
	}
	var ce *coded.Error
	if errors.As(err, &ce) && refusals[ce.Code] {
		return true
	}
	if next := errors.Unwrap(err); next != nil {
		return terminal(next)
	}
	return false
}
