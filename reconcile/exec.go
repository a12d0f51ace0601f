package reconcile

import (
	"time"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/internal/coded"
	"github.com/sandboxforge/sbf/sandbox"
	"github.com/sandboxforge/sbf/spec"
	"github.com/sandboxforge/sbf/state"
)

// Target finds a sandbox that holds a live lease and its driver. Commands
// never go to a sandbox whose lease has run out, even before the loop has
// deleted its VM.
func (e *Engine) Target(ws spec.Options, name string) (*sandbox.Target, error) {
	r, err := e.LoadShared(ws)
	if err != nil {
		return nil, err
	}
	// An adopted spare or an imported VM keeps its own name; the state
	// file knows it (read without the lock: a command does not wait for
	// an apply).
	rec, recErr := e.readShared(r)
	if recErr != nil {
		rec = nil
	}
	return e.target(r, rec, name)
}

// TargetOf is Target for a sandbox a run just converged, from what the
// run resolved and recorded (res): the request's own workspace handle,
// not a second load of its files.
func (e *Engine) TargetOf(res *Result, name string) (*sandbox.Target, error) {
	return e.target(res.Resolved, res.recorded, name)
}

func (e *Engine) target(r *spec.Resolved, rec *state.File, name string) (*sandbox.Target, error) {
	if err := live(r, rec, name, e.Clock.Now()); err != nil {
		return nil, err
	}
	sb := r.Config.Sandboxes[name]
	instance := drivers.InstanceName(r.WorkspaceID, name)
	var record *state.Sandbox
	if rec != nil {
		if sr := rec.Sandboxes[name]; sr != nil && !sr.Phase.Terminal() {
			record = sr
			if sr.Instance != "" {
				instance = sr.Instance
			}
		}
	}
	driver := r.Host.ResolveDriver(sb.Driver)
	return &sandbox.Target{Resolved: r, Sandbox: name, Instance: instance, DriverName: driver, Record: record,
		Clock: e.Clock, Getenv: e.Env.getenv, Open: func() (drivers.Driver, error) { return e.Drivers(driver, r) },
		MaxOutput: e.Policy.Ceilings.Defaulted().MaxOutputBytes.Value}, nil
}

// CheckLease says whether a sandbox holds a live lease, or why not:
// INSTANCE_TERMINAL with details status ("destroyed" or "expired") and
// sandbox. Nothing is done to a sandbox whose lease has run out, even
// before the loop has deleted its VM.
func CheckLease(r *spec.Resolved, sandbox string, now time.Time) *coded.Error {
	l, held := r.Config.Leases[sandbox]
	if held && now.Before(l.ExpiresAt) {
		return nil
	}
	status := "destroyed"
	if held {
		status = "expired"
	}
	return coded.New(coded.InstanceTerminal, map[string]any{"sandbox": sandbox, "status": status},
		"sandbox %s is %s; run 'sbf up %s' first", sandbox, status, sandbox)
}
