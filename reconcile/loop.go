package reconcile

import (
	"context"
	"time"

	"github.com/sandboxforge/sbf/internal/clock"
	"github.com/sandboxforge/sbf/spec"
)

// Watch is the reconcile loop of `sbf reconcile --watch`, `sbf serve` and
// the MCP server. Each pass converges every workspace without renewing any
// lease: it expires what ran out and repairs drift. It then sleeps until
// the earliest lease end or the interval, whichever comes first, so a
// lease outlives its expiry by at most one pass.
//
// Cancelling ctx stops the loop between passes; a pass already running
// finishes its actions and saves its state first.
func (e *Engine) Watch(ctx context.Context, workspaces func() []spec.Options, interval time.Duration,
	report func(spec.Options, *Result, error)) error {
	for {
		wake := e.Clock.Now().Add(interval)
		for _, ws := range workspaces() {
			if ctx.Err() != nil {
				return nil
			}
			res, err := e.Converge(context.WithoutCancel(ctx), ws, Options{})
			if report != nil {
				report(ws, res, err)
			}
			if res != nil && !res.NextExpiry.IsZero() && res.NextExpiry.Before(wake) {
				wake = res.NextExpiry
			}
		}
		if clock.Sleep(ctx, e.Clock, wake.Sub(e.Clock.Now())) != nil {
			return nil
		}
	}
}
