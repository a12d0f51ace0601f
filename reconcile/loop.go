package reconcile

import (
	"context"
	"time"

	"github.com/sandboxforge/sbf/spec"
)

// WatchOptions configure the reconcile loop.
type WatchOptions struct {
	// Workspaces lists what to converge; asked again every pass, so a
	// server can add workspaces as tool calls touch them.
	Workspaces func() []spec.Options
	Interval   time.Duration
	// Wake, when it receives, starts a pass early (a lease was created or
	// extended and may end before the current sleep does).
	Wake   <-chan struct{}
	Report func(spec.Options, *Result, error)
}

// Watch is the reconcile loop of `sbf reconcile --watch`, `sbf serve` and
// the MCP server. Each pass converges every workspace without renewing any
// lease: it expires what ran out and repairs drift. It then sleeps until
// the earliest lease end or the interval, whichever comes first, so a
// lease outlives its expiry by at most one pass.
//
// Cancelling ctx stops the loop between passes; a pass already running
// finishes its actions and saves its state first.
func (e *Engine) Watch(ctx context.Context, o WatchOptions) error {
	for {
		wake := e.Clock.Now().Add(o.Interval)
		for _, ws := range o.Workspaces() {
			if ctx.Err() != nil {
				return nil
			}
			res, err := e.Apply(context.WithoutCancel(ctx), ws, Options{})
			if o.Report != nil {
				o.Report(ws, res, err)
			}
			if res != nil && !res.NextExpiry.IsZero() && res.NextExpiry.Before(wake) {
				wake = res.NextExpiry
			}
		}
		select {
		case <-e.Clock.After(wake.Sub(e.Clock.Now())):
		case <-o.Wake:
		case <-ctx.Done():
			return nil
		}
	}
}
