package reconcile

import (
	"context"
	"errors"
	"slices"

	"github.com/sandboxforge/sbf/reconcile/plan"

	"github.com/sandboxforge/sbf/spec"
	"github.com/sandboxforge/sbf/state"
)

// observedDrivers are the backends a workspace's run lists: those its
// sandboxes use or used, and its pools'.
func observedDrivers(d plan.Desired, rec *state.File) []string {
	names := plan.DriversInUse(d, recordedDrivers(rec))
	for _, p := range d.Pools {
		if !slices.Contains(names, p.Driver) {
			names = append(names, p.Driver)
		}
	}
	slices.Sort(names)
	return names
}

// observe lists the workspace's drivers once and says which unlabelled
// spares a fill is still making.
func (e *Engine) observe(ctx context.Context, r *spec.Resolved, d plan.Desired, rec *state.File) plan.Observed {
	obs := Observe(ctx, r.WorkspaceID, observedDrivers(d, rec), e.lister(r))
	e.markInFlight(ctx, &obs)
	return obs
}

// bindInstances gives each desired sandbox the instance it has now (an
// adopted spare keeps its own name), for looking into guests.
func bindInstances(d plan.Desired, rec *state.File, obs plan.Observed) plan.Desired {
	out := d
	out.Sandboxes = map[string]plan.DesiredSandbox{}
	for name, ds := range d.Sandboxes {
		ds.Instance = plan.InstanceFor(d.WorkspaceID, name, rec.Sandboxes[name], obs)
		ds.VM.Name = ds.Instance
		out.Sandboxes[name] = ds
	}
	return out
}

// InstanceOf is the backend instance a sandbox's VM is (or would be):
// the derived name, or the spare it adopted, or the instance it imported.
func (r *Result) InstanceOf(sandbox string) string {
	return plan.InstanceFor(r.Resolved.WorkspaceID, sandbox, r.State.Sandboxes[sandbox], r.Observed)
}

// convergePools is a pool pass: it plans (pool status) or carries out
// (fill, drain) what the workspace's pools need: the spares nobody should
// keep deleted, the spares each pool lacks made and booted (the loop runs
// it apart from the workspace's own pass, so a create never waits for a
// refill). Spares are in no workspace's state file; each step is safe
// against other processes (claims are atomic).
func (e *Engine) convergePools(ctx context.Context, u *run, res *Result) (*Result, error) {
	r := u.r
	d := plan.DesiredFrom(r)
	res.Desired, res.Now, res.Plan = d, u.now, &plan.Plan{}
	drain, isDrain := u.opts.Intent.(DrainPools)
	if len(d.Pools) == 0 && !isDrain && !u.planOnly {
		return res, nil // no pool: the workspace's own passes collect stray spares
	}
	res.Observed = e.observe(ctx, r, d, u.rec)
	if isDrain {
		res.Plan = drainPlan(d, res.Observed, drain.All)
	} else {
		res.Plan = plan.ComputePools(d, res.Observed, u.now)
	}
	if u.planOnly {
		return res, nil
	}
	if ok, err := e.confirm(ctx, u, res); !ok {
		return res, err
	}
	var err error
	if len(res.Plan.Actions) > 0 {
		exec := e.executor(ctx, u, d)
		err = exec.Apply(ctx, res.Plan)
		outcome := exec.Outcome()
		res.Applied, res.Outcome = true, &outcome
		res.Observed = e.observe(ctx, r, d, u.rec)
	}
	return res, errors.Join(err, problemsError(res.Plan))
}
