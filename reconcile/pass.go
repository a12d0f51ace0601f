package reconcile

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"
	"time"

	"github.com/sandboxforge/sbf/internal/clock"
	"github.com/sandboxforge/sbf/internal/coded"
	"github.com/sandboxforge/sbf/spec"
)

// ErrTerminal matches (errors.Is) an error that retrying cannot fix until
// the workspace's configuration changes: the loop parks the workspace
// until one of its configuration files (spec.ConfigFiles) changes, or a
// Wake. A configuration spec.Load rejects (spec.ErrInvalid) is terminal
// by nature; TerminalError marks any other.
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

// refusals are the coded errors retrying does not fix by itself: the
// configuration, the host's capacity or a backend's presence must change
// first, so the loop parks the workspace instead of retrying it.
var refusals = map[string]bool{coded.ConfigInvalid: true, coded.BackendUnavailable: true,
	coded.InstanceLimit: true, coded.PolicyUnsupported: true, "INSUFFICIENT_HOST_RESOURCES": true}

// terminal says whether retrying err at once cannot help: it is marked
// so, or every failure it joins is a refusal.
func terminal(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, ErrTerminal) || errors.Is(err, spec.ErrInvalid) {
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

// ErrPassTimeout matches the error of a pass cancelled at
// WatchOptions.PassTimeout.
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
	res  *Result
	pool *Result
	err  error
}

// pass converges one entry's workspace (or its pools) within the pass
// timeout; a panic becomes its error.
func (c *controller) pass(ctx context.Context, key string, ws spec.Options, pools bool) (d passDone) {
	d.key = key
	defer func() {
		if v := recover(); v != nil {
			d.res, d.pool = nil, nil
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
		ctx, stop = withStopGrace(ctx, c.e.Clock, c.o.StopGrace)
		defer stop()
	}
	ctx, cancel := withTimeout(ctx, c.e.Clock, c.o.PassTimeout)
	defer cancel()
	if pools {
		d.pool, d.err = c.r.ReconcilePools(ctx, ws)
	} else {
		d.res, d.err = c.r.Reconcile(ctx, ws)
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

// fingerprint identifies the content of every file a workspace's
// configuration is read from, global ones included, so fixing any of
// them wakes a parked entry. A file's name, size, modification time and
// a hash of what spec.Load would read go in; a file that cannot be read
// says why (so making it readable is a change too).
func fingerprint(ws spec.Options) string {
	var b strings.Builder
	for _, path := range spec.ConfigFiles(ws.Root, ws.ConfigHome) {
		info, err := os.Stat(path)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		fmt.Fprintf(&b, "%s:", path)
		if err == nil {
			fmt.Fprintf(&b, "%d:%d:", info.Size(), info.ModTime().UnixNano())
			err = hashFile(&b, path)
		}
		if err != nil {
			fmt.Fprintf(&b, "%v", err)
		}
		b.WriteString(";")
	}
	return "files:" + b.String()
}

// hashFile writes the hash of path's first bytes (as many as spec.Load
// reads, and one more) to b.
func hashFile(b *strings.Builder, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, io.LimitReader(f, int64(spec.DefaultLimits.MaxBytes)+1)); err != nil {
		return err
	}
	fmt.Fprintf(b, "%x", h.Sum(nil))
	return nil
}
