package reconcile

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/sandboxforge/sbf/reconcile/executor"
	"github.com/sandboxforge/sbf/reconcile/plan"
	"github.com/sandboxforge/sbf/reconcile/pools"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/internal/clock"
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

// observe lists the workspace's drivers once, says which unlabelled
// spares a fill is still making and why recorded instances went without
// sbf (departures).
func (e *Engine) observe(ctx context.Context, r *spec.Resolved, d plan.Desired, rec *state.File) plan.Observed {
	obs := Observe(ctx, r.WorkspaceID, observedDrivers(d, rec), e.lister(r))
	pools.MarkInFlight(ctx, e.HostDir, &obs)
	e.departures(ctx, r, rec, &obs)
	return obs
}

// bindInstances gives each desired sandbox the instance it has now (an
// adopted spare keeps its own name), for looking into guests.
func bindInstances(d plan.Desired, rec *state.File, obs plan.Observed) plan.Desired {
	out := d
	out.Sandboxes = make(map[string]plan.DesiredSandbox, len(d.Sandboxes))
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
	return plan.InstanceFor(r.Resolved.WorkspaceID, sandbox, r.recorded.Sandboxes[sandbox], r.Observed)
}

// evictSpare deletes one spare nobody is making or owns, the one that
// would idle out first, so a sandbox's VM fits under the instance cap.
func (e *Engine) evictSpare(
	ctx context.Context,
	r *spec.Resolved,
	listed []drivers.Instance,
	inFlight func(string) bool,
) (bool, error) {
	for _, c := range pools.Evictable(listed, inFlight) {
		drv, err := e.Drivers(c.Driver, r)
		if err != nil {
			return false, err
		}
		lab := drivers.CapabilitiesOf(drv).Labels
		if lab == nil {
			continue
		}
		drivers.Progressf(ctx, "deleting spare %s to stay within [lease] max_instances", c.Name)
		deleted, err := executor.RetireAndDelete(ctx, drv, lab, e.HostDir, e.holder(), e.Clock.Now(), c.Name)
		if err != nil || deleted {
			return deleted, err
		}
	}
	return false, nil
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
		res.Plan = pools.DrainPlan(d, res.Observed, drain.All)
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
		exec.Warmed()
		outcome := exec.Outcome()
		res.Applied, res.Outcome = true, &outcome
		res.Observed = e.observe(ctx, r, d, u.rec)
	}
	return res, errors.Join(err, problemsError(res.Plan))
}

// warmFor bounds the warm-up of one spare in a pool pass: a ready spare
// answers at once, and one that does not is left to its first command.
const warmFor = 10 * time.Second

// warmSpares connects to each ready spare a pool pass left (drivers.Warmer;
// a spare connected already costs nothing more): a create in this process
// that adopts one then skips the handshake with its guest, about a second
// under emulation where the rest of a warm create takes a tenth of that.
// The spares a loop made itself are connected by their runtime check; this
// covers those another process made and those with no runtime. Only a loop
// does this; a one-shot command would hold the connections for nothing.
func (e *Engine) warmSpares(ctx context.Context, res *Result) {
	if res == nil || res.Resolved == nil {
		return
	}
	for _, p := range res.PoolsReport().Pools {
		for _, s := range p.Spares {
			if s.State != "ready" {
				continue
			}
			drv, err := e.Drivers(s.Driver, res.Resolved)
			if err != nil {
				continue
			}
			if w := drivers.CapabilitiesOf(drv).Warm; w != nil {
				wctx, cancel := clock.WithTimeout(ctx, e.Clock, warmFor)
				_ = w.Warm(wctx, s.Instance) // a spare that cannot be reached now is tried at its first command
				cancel()
			}
		}
	}
}

// The pools' report (reconcile/pools); the doors know it by these names.
type (
	PoolStatus  = pools.Status
	SpareStatus = pools.SpareStatus
	PoolsReport = pools.Report
)

// PoolsReport describes the pools and spares as observed.
func (res *Result) PoolsReport() PoolsReport {
	return pools.ReportOf(res.Desired, res.Observed, res.Plan, res.Now)
}

// NextIdleOut is when the first ready spare the pass saw idles out (zero
// when none): the loop's pool pass wakes then to replace it.
func (res *Result) NextIdleOut() time.Time { return pools.NextIdleOut(res.Observed, res.Now) }
