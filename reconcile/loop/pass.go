package loop

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/sandboxforge/sbf/internal/clock"
	"github.com/sandboxforge/sbf/spec"
)

// ErrTerminal matches (errors.Is) an error that retrying cannot fix until
// the workspace's configuration changes: the loop parks the workspace
// until one of its configuration files (spec.ConfigFiles) changes, or a
// Wake. The Reconciler marks such errors with TerminalError.
var ErrTerminal = errors.New("retrying cannot help until the configuration changes")

// TerminalError marks err as terminal (see ErrTerminal), keeping its
// message and its chain for errors.Is and errors.As.
func TerminalError(err error) error {
	if err == nil {
		return nil
	}
	return &terminalError{err}
}

type terminalError struct{ err error }

func (t *terminalError) Error() string        { return t.err.Error() }
func (t *terminalError) Unwrap() error        { return t.err }
func (t *terminalError) Is(target error) bool { return target == ErrTerminal }

// terminal says whether retrying err at once cannot help.
func terminal(err error) bool { return errors.Is(err, ErrTerminal) }

// ErrPassTimeout matches the error of a pass cancelled at
// Options.PassTimeout.
var ErrPassTimeout = errors.New("the reconcile pass ran past its timeout and was cancelled")

// PassPanic is a pass that panicked: the loop recovers, reports it and
// retries the workspace with backoff.
type PassPanic struct {
	Workspace string
	Pools     bool // the workspace's pool pass
	Value     any
	Stack     []byte
}

func (p *PassPanic) Error() string {
	what := "reconcile pass"
	if p.Pools {
		what = "pool pass"
	}
	return fmt.Sprintf("%s of %s panicked: %v\n%s", what, p.Workspace, p.Value, p.Stack)
}

type passDone struct {
	key  string
	pass Pass
	err  error
}

// pass converges one entry's workspace (or its pools) within the pass
// timeout; a panic becomes its error.
func (c *controller) pass(ctx context.Context, key string, ws spec.Options, pools bool) (d passDone) {
	d.key = key
	defer func() {
		if v := recover(); v != nil {
			d.pass = nil
			d.err = &PassPanic{Workspace: ws.Root, Pools: pools, Value: v, Stack: debug.Stack()}
		}
	}()
	if !pools {
		// Stopping the loop lets a workspace's pass finish its actions and
		// save their outcome, for StopGrace (shorter than a service
		// manager's stop timeout, which would kill it mid-step); then its
		// driver calls are cancelled and it records what it did. A refill
		// stops with the loop: a spare cut off mid-boot is deleted (now, or
		// by the next pass), and nobody waits for a VM nobody asked for yet.
		var stop context.CancelFunc
		ctx, stop = withStopGrace(ctx, c.o.Clock, c.o.StopGrace)
		defer stop()
	}
	ctx, cancel := withTimeout(ctx, c.o.Clock, c.o.PassTimeout)
	defer cancel()
	if pools {
		d.pass, d.err = c.r.ReconcilePools(ctx, ws)
	} else {
		d.pass, d.err = c.r.Reconcile(ctx, ws)
	}
	if d.err != nil && errors.Is(context.Cause(ctx), ErrPassTimeout) {
		d.err = fmt.Errorf("%w (after %s): %w", ErrPassTimeout, c.o.PassTimeout, d.err)
	}
	if d.err != nil && errors.Is(context.Cause(ctx), ErrStopGrace) {
		d.err = fmt.Errorf("%w (after %s): %w", ErrStopGrace, c.o.StopGrace, d.err)
	}
	return d
}

// ErrStopGrace matches the error of a pass cancelled because the loop
// stopped and its StopGrace ran out.
var ErrStopGrace = errors.New("the loop stopped and the pass ran past its grace")

// withStopGrace is parent without its cancellation, until StopGrace after
// parent ends.
func withStopGrace(parent context.Context, clk clock.Clock, grace time.Duration) (context.Context,
	context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(context.WithoutCancel(parent))
	go func() {
		select {
		case <-parent.Done():
		case <-ctx.Done():
			return
		}
		t := clk.NewTimer(grace)
		defer t.Stop()
		select {
		case <-t.C():
			cancel(ErrStopGrace)
		case <-ctx.Done():
		}
	}()
	return ctx, func() { cancel(context.Canceled) }
}

// withTimeout is context.WithTimeout on clk, so the clock a test (or
// SBF_NOW) chooses decides when a pass times out. The timer is stopped
// when cancel returns.
func withTimeout(parent context.Context, clk clock.Clock, d time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(parent)
	t := clk.NewTimer(d)
	go func() {
		select {
		case <-t.C():
			cancel(ErrPassTimeout)
		case <-ctx.Done():
		}
	}()
	return ctx, func() {
		t.Stop()
		cancel(context.Canceled)
	}
}
