package reconcile

import (
	"context"
	"maps"
	"slices"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/internal/readcount"
	"github.com/sandboxforge/sbf/reconcile/plan"
	"github.com/sandboxforge/sbf/reconcile/pools"
	"github.com/sandboxforge/sbf/spec"
	"github.com/sandboxforge/sbf/state"
)

// observeAfter is what a run's VMs became: the instances its plan touched
// looked up again over what was observed before it, so a run's cost does
// not grow with the instances it left alone. A backend that cannot look
// instances up (drivers.Inspector) is listed again, as before the run.
func (e *Engine) observeAfter(ctx context.Context, r *spec.Resolved, d plan.Desired, rec *state.File,
	before plan.Observed, p *plan.Plan) plan.Observed {
	return e.lookUp(ctx, r, d, rec, before, touchedInstances(p, rec))
}

// lookUp is what was observed before with the touched instances (by
// driver) looked up again; a backend that cannot look instances up is
// listed again.
func (e *Engine) lookUp(ctx context.Context, r *spec.Resolved, d plan.Desired, rec *state.File,
	before plan.Observed, touched map[string][]string) plan.Observed {
	found := map[string][]drivers.Instance{}
	for driver, names := range touched {
		drv, err := e.Drivers(driver, r)
		if err != nil {
			return e.observe(ctx, r, d, rec)
		}
		in := drivers.CapabilitiesOf(drv).Inspect
		if in == nil {
			return e.observe(ctx, r, d, rec)
		}
		readcount.Add(readcount.Inspect)
		if found[driver], err = in.Inspect(ctx, names); err != nil {
			return e.observe(ctx, r, d, rec)
		}
	}
	obs := before
	obs.Instances, obs.Owned = maps.Clone(before.Instances), maps.Clone(before.Owned)
	obs.Spares, obs.Guests, obs.EnvOK, obs.Invalid = slices.Clone(before.Spares), nil, nil, nil
	obs.Teammates = slices.Clone(before.Teammates)
	for driver, names := range touched {
		obs.Refresh(r.WorkspaceID, driver, names, found[driver])
	}
	pools.MarkInFlight(ctx, e.HostDir, &obs)
	return obs
}

// touchedInstances are, by driver, the instances a plan's actions may have
// made, changed, claimed or removed: each action's own, the spares an
// adoption could take, and the one its sandbox's record now names.
func touchedInstances(p *plan.Plan, rec *state.File) map[string][]string {
	out := map[string][]string{}
	add := addInstance(out)
	for _, a := range p.Actions {
		add(a.Driver, a.Instance)
		add(a.OldDriver, a.Instance)
		for _, spare := range a.Warm {
			add(a.Driver, spare)
		}
		if sr := rec.Sandboxes[a.Sandbox]; sr != nil {
			add(a.Driver, sr.Instance)
		}
	}
	return out
}

// addInstance adds to out an instance of a driver, once.
func addInstance(out map[string][]string) func(driver, instance string) {
	return func(driver, instance string) {
		if driver != "" && instance != "" && !slices.Contains(out[driver], instance) {
			out[driver] = append(out[driver], instance)
		}
	}
}
