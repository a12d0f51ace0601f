package reconcile

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/sandboxforge/sbf/reconcile/admission"
	"github.com/sandboxforge/sbf/reconcile/executor"
	"github.com/sandboxforge/sbf/reconcile/plan"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/internal/coded"
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

// markInFlight finds the spares a fill is still making: unlabelled ones
// whose reservation (admission slot) a live process holds. Without a host
// folder nothing can be known, and every unlabelled spare is left alone.
func (e *Engine) markInFlight(ctx context.Context, obs *plan.Observed) {
	for i, s := range obs.Spares {
		if s.Label != nil && s.Label.Spare != nil || s.Label != nil && s.Label.Owner != nil {
			continue
		}
		obs.Spares[i].InFlight = e.HostDir == "" || admission.Creating(ctx, e.HostDir, s.Name)
	}
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

// evictSpare deletes one spare nobody is making or owns, the one that
// would idle out first, so a sandbox's VM fits under the instance cap.
func (e *Engine) evictSpare(
	ctx context.Context,
	r *spec.Resolved,
	listed []drivers.Instance,
	inFlight func(string) bool,
) (bool, error) {
	var cands []drivers.Instance
	for _, inst := range listed {
		if _, _, ok := drivers.ParsePoolName(inst.Name); !ok || inst.Label != nil && inst.Label.Owner != nil {
			continue
		}
		if (inst.Label == nil || inst.Label.Spare == nil) && inFlight(inst.Name) {
			continue
		}
		cands = append(cands, inst)
	}
	idle := func(i drivers.Instance) time.Time {
		if i.Label == nil || i.Label.Spare == nil {
			return time.Time{} // left by a crash: first to go
		}
		return i.Label.Spare.IdleUntil
	}
	sort.Slice(cands, func(i, j int) bool {
		a, b := idle(cands[i]), idle(cands[j])
		return a.Before(b) || a.Equal(b) && cands[i].Name < cands[j].Name
	})
	for _, c := range cands {
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

// drainPlan deletes the spares of the workspace's pools (their shapes, or
// made for them), or with all every spare listed; spares a fill is still
// making are left (drain again once they are ready).
func drainPlan(d plan.Desired, obs plan.Observed, all bool) *plan.Plan {
	shapes := map[string]bool{}
	for _, p := range d.Pools {
		shapes[p.Driver+"/"+p.Shape] = true
	}
	p := &plan.Plan{}
	for _, s := range obs.Spares {
		ours := s.Label != nil && s.Label.Spare != nil && s.Label.Spare.Workspace == d.WorkspaceID
		if s.InFlight || !all && !ours && !shapes[s.Driver+"/"+s.Shape()] {
			continue
		}
		p.Actions = append(p.Actions, plan.SpareDelete(s, "drained"))
	}
	return p
}

// PoolStatus is one pool as `sbf pool status` shows it.
type PoolStatus struct {
	Name    string        `json:"name"`
	Driver  string        `json:"driver"`
	Shape   string        `json:"shape"`
	Size    int           `json:"size"`
	MaxIdle spec.Duration `json:"max_idle"`
	Ready   int           `json:"ready"`
	Booting int           `json:"booting"`
	Spares  []SpareStatus `json:"spares"`
	Problem string        `json:"problem,omitempty"`
}

// SpareStatus is one spare.
type SpareStatus struct {
	Instance  string     `json:"instance"`
	Driver    string     `json:"driver"`
	Pool      string     `json:"pool,omitempty"`
	State     string     `json:"state"` // ready, booting, idle-expired, retired, unfinished, stopped, broken
	Runtime   bool       `json:"runtime_ready"`
	CreatedAt *time.Time `json:"created_at,omitempty"`
	IdleUntil *time.Time `json:"idle_until,omitempty"`
}

// PoolsReport is `sbf pool status --json`: the workspace's pools, then
// the spares no pool of it describes (other workspaces' pools).
type PoolsReport struct {
	Pools  []PoolStatus  `json:"pools"`
	Others []SpareStatus `json:"other_spares"`
}

// PoolsReport describes the pools and spares as observed.
func (res *Result) PoolsReport() PoolsReport {
	out := PoolsReport{Pools: []PoolStatus{}, Others: []SpareStatus{}}
	problems := map[string]string{}
	if res.Plan != nil {
		for _, pr := range res.Plan.Problems {
			problems[pr.Sandbox] = pr.Message
		}
	}
	claimed := map[string]bool{}
	for _, name := range slices.Sorted(maps.Keys(res.Desired.Pools)) {
		pl := res.Desired.Pools[name]
		ps := PoolStatus{Name: name, Driver: pl.Driver, Shape: pl.Shape, Size: pl.Size, MaxIdle: spec.Duration(pl.MaxIdle),
			Spares: []SpareStatus{}, Problem: problems["pool."+name]}
		for _, s := range res.Observed.Spares {
			if s.Driver != pl.Driver || s.Shape() != pl.Shape {
				continue
			}
			claimed[s.Name] = true
			st := spareStatus(s, res.Now)
			switch st.State {
			case "ready":
				ps.Ready++
			case "booting":
				ps.Booting++
			}
			ps.Spares = append(ps.Spares, st)
		}
		out.Pools = append(out.Pools, ps)
	}
	for _, s := range res.Observed.Spares {
		if !claimed[s.Name] {
			out.Others = append(out.Others, spareStatus(s, res.Now))
		}
	}
	return out
}

func spareStatus(s plan.Spare, now time.Time) SpareStatus {
	st := SpareStatus{Instance: s.Name, Driver: s.Driver}
	l := s.Label
	switch {
	case l != nil && l.Owner != nil && l.Owner.Retired:
		st.State = "retired"
	case l == nil || l.Spare == nil:
		st.State = map[bool]string{true: "booting", false: "unfinished"}[s.InFlight]
	case s.Status != drivers.Running:
		st.State = string(s.Status)
	case !now.Before(l.Spare.IdleUntil):
		st.State = "idle-expired"
	default:
		st.State = "ready"
	}
	if l != nil && l.Spare != nil {
		created, until := l.Spare.CreatedAt, l.Spare.IdleUntil
		st.Pool, st.CreatedAt, st.IdleUntil, st.Runtime = l.Spare.Pool, &created, &until, l.Spare.Docker != ""
	}
	return st
}

// NextIdleOut is when the first ready spare the pass saw idles out (zero
// when none): the loop's pool pass wakes then to replace it.
func (res *Result) NextIdleOut() time.Time {
	var next time.Time
	for _, s := range res.Observed.Spares {
		if s.Label == nil || s.Label.Spare == nil || !res.Now.Before(s.Label.Spare.IdleUntil) {
			continue
		}
		if t := s.Label.Spare.IdleUntil; next.IsZero() || t.Before(next) {
			next = t
		}
	}
	return next
}

// AdoptRequest asks to take an existing backend instance, made outside
// sbf's pools (a SandboxForge v1 VM), as the VM of an ad-hoc sandbox.
type AdoptRequest struct {
	// Sandbox is the ad-hoc sandbox to declare (a valid sandbox name no
	// file of the workspace declares), e.g. v1's instance id.
	Sandbox string
	// Instance is the backend's name for the VM, kept as it is.
	Instance string
	// Driver runs it ("": the workspace's [vm] driver).
	Driver string
	// ExpiresAt ends the lease; AcquiredAt (zero: now) is where
	// max_lifetime counts from. Both are bounded at load as any lease.
	ExpiresAt  time.Time
	AcquiredAt time.Time
	// Keys are [vm] keys the sandbox is declared with, as `sbf up` takes
	// them (cpus as int64, memory_gib as float64, runtime as bool …):
	// say what the VM has, or the next plan changes the VM to match.
	Keys map[string]any
}

// AdoptInstance declares req.Sandbox as an ad-hoc sandbox whose VM is
// the existing instance req.Instance, leased until req.ExpiresAt, and
// converges it: the instance's ownership label is claimed (refused when
// another sandbox owns it; a missing instance is INSTANCE_NOT_FOUND in the
// sandbox's error), it is recorded in the state file, started when
// stopped, and the sandbox's layers run as for any VM. The declaration
// and lease are written first (an `adopt` key in the managed overrides),
// so a crash before the claim repeats the import on the next run and a
// crash after it finds the instance by its label. Rerunning it is safe. A
// failed import is not rolled back: the VM is never deleted for it.
// From then on the sandbox is like any other: its lease expires and the
// VM is deleted, `sbf destroy` and destroy_instance delete it.
func (e *Engine) AdoptInstance(ctx context.Context, ws spec.Options, req AdoptRequest) (*Result, error) {
	now := e.Clock.Now()
	switch {
	case !spec.ValidSandboxName(req.Sandbox):
		return nil, coded.New(
			coded.ConfigInvalid,
			map[string]any{"sandbox": req.Sandbox},
			"%q is not a valid sandbox name (letters, digits, '-' and '_', starting and ending with a letter or digit)",
			req.Sandbox,
		)
	case req.Instance == "":
		return nil, coded.New(coded.InvalidArguments, map[string]any{"field": "instance"}, "no instance to adopt")
	case !now.Before(req.ExpiresAt):
		return nil, coded.New(
			coded.TTLInvalid,
			map[string]any{"expires_at": req.ExpiresAt.UTC().Format(time.RFC3339)},
			"the lease of %s ended at %s; an expired lease is not adopted",
			req.Sandbox,
			req.ExpiresAt.UTC().Format(time.RFC3339),
		)
	}
	keys := maps.Clone(req.Keys)
	if keys == nil {
		keys = map[string]any{}
	}
	keys["adopt"] = req.Instance
	if req.Driver != "" {
		keys["driver"] = req.Driver
	}
	acquired := req.AcquiredAt
	if acquired.IsZero() {
		acquired = now
	}
	edit := func(m *spec.Managed, c EditContext) error {
		r := c.Resolved
		if _, declared := r.Config.Sandboxes[req.Sandbox]; declared && !r.AdHoc[req.Sandbox] {
			return coded.New(coded.ConfigInvalid, map[string]any{"sandbox": req.Sandbox},
				"sandbox %s is declared by the workspace's files; an adopted instance needs an ad-hoc sandbox", req.Sandbox)
		}
		m.Declare(req.Sandbox, keys)
		m.SetLease(
			req.Sandbox,
			spec.LeaseRecord{
				AcquiredAt: acquired.UTC().Truncate(time.Second),
				ExpiresAt:  req.ExpiresAt.UTC().Truncate(time.Second),
			},
		)
		return nil
	}
	res, err := e.Apply(ctx, ws, Options{Targets: []string{req.Sandbox},
		Intent: engineEdit{op: "adopt", targets: []string{req.Sandbox}, change: edit}})
	if err != nil {
		return res, fmt.Errorf("adopting %s as sandbox %s: %w", req.Instance, req.Sandbox, err)
	}
	return res, nil
}

// adoptSignal tells the engine's running loops that a spare was adopted,
// whichever door's run adopted it, so their pool passes refill at once.
type adoptSignal struct {
	mu   sync.Mutex
	subs []chan struct{}
}

// subscribe returns a channel that receives after adoptions (several
// coalesce into one) and the function that ends the subscription.
func (s *adoptSignal) subscribe() (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	s.mu.Lock()
	s.subs = append(s.subs, ch)
	s.mu.Unlock()
	return ch, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.subs = slices.DeleteFunc(s.subs, func(c chan struct{}) bool { return c == ch })
	}
}

func (s *adoptSignal) notify() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, ch := range s.subs {
		select {
		case ch <- struct{}{}:
		default: // one is pending already
		}
	}
}
