package reconcile

import (
	"context"
	"maps"
	"slices"

	"github.com/sandboxforge/sbf/reconcile/admission"
	"github.com/sandboxforge/sbf/reconcile/plan"
	"github.com/sandboxforge/sbf/state"
)

// planned is what one planning pass of a run made besides its Result.
type planned struct {
	desired  plan.Desired
	layers   map[string]*plan.Layers
	found    []string // sandboxes only the backends name (plan.Found)
	rec      *state.File
	observed plan.Observed
	plan     *plan.Plan
}

// planSandboxes observes the backends and plans the run's sandboxes into
// res; done says the run holds none of them, so there is nothing to do.
// A plan after the first (first) looks up again only the instances of the
// sandboxes the run holds over what the first observed: only a run that
// holds a sandbox changes its VMs, and this one holds them now.
func (e *Engine) planSandboxes(ctx context.Context, u *run, res *Result, first *planned) (planned, bool, error) {
	r, rec := u.r, u.rec
	look := planned{desired: plan.DesiredFrom(r), rec: rec}
	desired := look.desired
	desired.Force = forced(u.opts.Intent)
	look.desired = desired
	var err error
	if look.layers, err = resolveLayers(ctx, r, leaseLive(desired, u.now), u.opts.Targets, e.Env); err != nil {
		return look, false, err
	}
	for name, l := range look.layers {
		sb := desired.Sandboxes[name]
		sb.Layers = l
		desired.Sandboxes[name] = sb
	}
	if first == nil {
		res.Observed = e.observe(ctx, r, desired, rec)
	} else {
		res.Observed = e.lookUp(ctx, r, desired, rec, first.observed, u.heldInstances(first, desired, u.lookedAt()))
	}
	look.observed = res.Observed
	look.found = plan.Found(desired, rec, res.Observed)
	if err := e.locks().Found(ctx, u.locks, u.dir, look.found, u.planOnly,
		func() (func(string) bool, error) { return e.namedNow(u) }); err != nil {
		return look, false, err
	}
	res.Busy = u.busy()
	targets, none := u.targets()
	if none {
		u.nothingHeld(res, desired)
		return look, true, nil
	}
	res.Observed.Invalid = ValidateSpecs(ctx, desired, res.Observed.Unavailable,
		func(name string) (Driver, error) { return e.Drivers(name, r) })
	res.Observed.Guests, res.Observed.EnvOK = observeGuests(ctx, bindInstances(desired, rec, res.Observed),
		res.Observed, rec, u.now, targets, e.runner(r))
	p := plan.ComputeFor(desired, rec, res.Observed, u.now, targets)
	res.Plan = u.keep(p, targets).Without(u.locks.LeftAlone())
	look.plan = res.Plan
	res.Desired, res.Now = desired, u.now
	res.NextExpiry = nextExpiry(desired, u.now)
	return look, false, nil
}

// keep is the part of a plan the run may carry out: its targets' before
// it took its locks (a first plan, or one that only looks), else the
// steps on the sandboxes it holds (and the spares' when it holds every
// sandbox its first plan acted on and names none), with the problems of
// what it was asked about.
func (u *run) keep(p *plan.Plan, targets []string) *plan.Plan {
	if u.planOnly || u.locks == nil {
		return p.Only(targets)
	}
	if u.locks.Partial() { // a loop pass leaving sandboxes to other runs: as it holds them
		return p.Only(targets)
	}
	spares := len(u.opts.Targets) == 0
	return p.Only(u.opts.Targets).Holding(u.locks.Holds, spares)
}

// lockActedOn takes the locks of the sandboxes the run's first plan acts
// on (and of their sources, in the order that keeps two runs from waiting
// for each other in a circle), tries once for those of records the run's
// end would archive, and says whether it must plan again: another run may
// have changed what it now holds since it looked, so the state and the
// managed overrides are read again (only what changed) and the run plans
// from them. A plan only looks: it waits for those sandboxes' runs to end
// and notes who still holds them.
func (e *Engine) lockActedOn(ctx context.Context, u *run, res *Result, found []string) (bool, error) {
	names := actedOn(u, res.Plan, found)
	u.waited = names
	mode := lockModeOf(u.opts, u.planOnly)
	var err error
	if u.locks, err = e.locks().Sandboxes(ctx, u.dir, names, mode); err != nil {
		return false, err
	}
	if mode == admission.SkipBusy {
		u.locks.YieldCopies(func(name string) string { return plan.SourceOf(u.r, u.rec, name) })
	}
	if !u.planOnly {
		if err := e.locks().TryMore(ctx, u.locks, u.dir, archivable(u)); err != nil {
			return false, err
		}
	}
	if len(names) == 0 && len(found) == 0 {
		return false, nil // nothing to act on: the first plan stands
	}
	changed := false
	if u.planOnly {
		again, err := u.looked.Again()
		if err != nil {
			return false, err
		}
		changed, u.looked = again != u.looked, again
	} else if changed, err = u.store.Reload(ctx); err != nil {
		return false, err
	}
	fresh, err := u.before.Fresh()
	if err != nil {
		return false, err
	}
	if !changed && fresh == u.before && len(found) == 0 && !u.locks.Partial() {
		// Nobody wrote the state or the overrides since the first plan, and
		// the run holds every sandbox that plan acts on: a run that acted on
		// them meanwhile would have written (it records each step before it
		// lets go of their locks), so the plan stands.
		return false, nil
	}
	u.before = fresh
	if u.planOnly {
		u.rec = u.looked.File
	} else {
		u.rec = u.store.Snapshot()
	}
	if u.planOnly && u.opts.Ended {
		if u.rec, err = state.WithEnded(u.dir, u.rec); err != nil {
			return false, err
		}
	}
	res.recorded = u.rec
	return true, u.applyRequest(e)
}

// actedOn are the sandboxes a plan acts on (an action, a record corrected,
// a lease end recorded) with their sources, less those only the backends
// name (the run locks those as it finds them: admission.Locks.Found) and
// those whose lease it only renews (recorded by compare-and-set on their
// records: plan.RenewalsAlone).
func actedOn(u *run, p *plan.Plan, found []string) []string {
	alone := p.RenewalsAlone()
	u.renewing = len(alone) > 0
	set := map[string]bool{}
	add := func(name string) {
		if name != "" && !slices.Contains(found, name) {
			set[name] = true
		}
	}
	for _, a := range p.Actions {
		add(a.Sandbox)
	}
	for _, r := range p.Refresh {
		add(r.Sandbox)
	}
	for _, l := range p.Leases {
		if !alone[l.Sandbox] {
			add(l.Sandbox)
		}
	}
	return admission.WithSources(u.r, u.rec, slices.Sorted(maps.Keys(set)))
}

// archivable are the records the run's end would move to the archive
// (state.Store.Archive) were their sandboxes' locks its own.
func archivable(u *run) []string {
	var out []string
	for name, sb := range u.rec.Sandboxes {
		if _, declared := u.r.Config.Sandboxes[name]; !declared && state.Archivable(sb) && !u.locks.Holds(name) {
			out = append(out, name)
		}
	}
	return out
}

// heldInstances are, by driver, the instances of the sandboxes names
// (those the run holds, or a plan waited for) that another run may have changed since the first plan observed
// them: those its steps would touch, those their records named then and
// name now, and those the desired state names.
func (u *run) heldInstances(first *planned, desired plan.Desired, names []string) map[string][]string {
	out := touchedInstances(first.plan.Holding(func(name string) bool { return slices.Contains(names, name) },
		false), u.rec)
	add := addInstance(out)
	for _, name := range names {
		for _, rec := range []*state.File{first.rec, u.rec} {
			if sb := rec.Sandboxes[name]; sb != nil {
				add(sb.Driver, sb.Instance)
			}
		}
		if ds, ok := desired.Sandboxes[name]; ok {
			add(ds.Driver, ds.Instance)
		}
	}
	return out
}

// lookedAt are the sandboxes whose runs this one waited for: those it
// holds, or, for a plan, those it waited to be let go.
func (u *run) lookedAt() []string {
	if u.planOnly {
		return u.waited
	}
	return u.locks.Names()
}
