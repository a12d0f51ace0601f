package reconcile

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sandboxforge/sbf/reconcile/admission"
	"github.com/sandboxforge/sbf/reconcile/executor"
	"github.com/sandboxforge/sbf/reconcile/plan"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/drivers/guest"
	"github.com/sandboxforge/sbf/internal/clock"
	"github.com/sandboxforge/sbf/internal/flock"
	"github.com/sandboxforge/sbf/internal/hostcap"
	"github.com/sandboxforge/sbf/internal/policy"
	"github.com/sandboxforge/sbf/internal/readcount"
	"github.com/sandboxforge/sbf/spec"
	"github.com/sandboxforge/sbf/state"
)

// DriverFactory returns the backend a workspace's sandboxes use, or why it
// cannot be used (*drivers.UnavailableError).
type DriverFactory func(name string, r *spec.Resolved) (Driver, error)

// Engine is the one path from a front door (CLI command, MCP tool) to the
// world: edit the desired state, observe, plan, execute, record.
type Engine struct {
	Clock       clock.Clock
	Drivers     DriverFactory
	HostDir     string // host-wide state: instance index, admission
	Parallelism int
	LockTimeout time.Duration
	Who         flock.Holder
	Events      func(Event)
	// Env is the process environment: ${VAR} in secrets, and compose
	// interpolation when a workspace asks for it.
	Env LayerEnv
	// Probe measures what the host can give a new VM (nil: hostcap.Probe).
	Probe func(path string) hostcap.Capacity
	// Policy is the operator's: the host folders [vm] mounts may share
	// besides the workspace.
	Policy policy.Policy

	adoptions adoptSignal // tells running loops a spare was taken
	shared    shared      // the data plane's reads, reused while their files are unchanged
	hostIndex *state.HostIndex
	ledger    *state.Ledger
	indexOnce sync.Once
	loads     atomic.Int64
}

// Load resolves a workspace's desired state under the operator's policy
// (its allowed paths and its ceilings) and against the backends this build
// links.
func (e *Engine) Load(ws spec.Options) (*spec.Resolved, error) {
	ws.AllowedPaths, ws.Ceilings, ws.Backends = e.Policy.AllowedPaths, e.Policy.Ceilings, drivers.Linked
	e.loads.Add(1)
	return spec.Load(ws)
}

// Loads counts the workspace resolutions (Load) the engine made: a
// request's main fixed cost, so each request makes at most one
// (sbf_workspace_loads_total).
func (e *Engine) Loads() int64 { return e.loads.Load() }

// Options say what one convergence does.
type Options struct {
	// Targets are only these sandboxes (all when empty); by default the
	// ones the intent names.
	Targets []string
	// Intent is the change a door asks for, written to the desired state
	// only if the plan runs. Required: a run without one is refused.
	Intent Intent
	read   *firstRead // what the request read before the run (Clone's checks)
	// Confirm sees the plan before anything changes; false stops there.
	Confirm func(*plan.Plan) (bool, error)
	Saved   *SavedPlan // refuse to run unless the world still matches it
	// NoWait starts services without waiting for their readiness probes
	// (prepare_workspace with wait_for_ready false).
	NoWait bool
	// rollback undoes a failed create: the sandbox's lease is dropped and
	// whatever was made of it deleted, so a failed `sbf up`,
	// create_instance or clone leaves nothing behind; other runs retry
	// instead. The engine decides it from the intent (decided); no door
	// chooses it.
	rollback bool
	// Audit, when set, names the door and command that asked: the run is
	// recorded in the workspace's history.
	Audit *Audit
	// Ended has a plan (Engine.Plan) see the records of ended sandboxes the
	// archive keeps too (status --all, list_instances' include_expired); a
	// run never reads them.
	Ended bool
}

// Result is what a convergence saw and did.
type Result struct {
	Resolved *spec.Resolved
	Plan     *plan.Plan
	// recorded is the state file after the run (before it, for a dry run):
	// the engine's; doors see a sandbox's record through Recorded.
	recorded *state.File
	Observed plan.Observed
	Applied  bool
	// Outcome says, when the plan was carried out, which action did what
	// and which lease ends were recorded: a failed action is never done.
	Outcome *Outcome
	// RolledBack are the sandboxes whose failed create was undone (their
	// lease dropped, what was made deleted): Options.rollback.
	RolledBack []string
	// NextExpiry is the earliest live lease end, zero when none: the
	// watch loop wakes then.
	NextExpiry time.Time
	// Warnings are what sbf corrected in the files as they were (a lease
	// end clamped to its bounds), even when this run's edit rewrote them.
	Warnings []string
	// Desired is what the plan was made for; Now is when.
	Desired plan.Desired
	Now     time.Time
	// Busy names the process changing the workspace while a plan was made
	// (it did not let go within LockTimeout): records and world may be
	// halfway between two steps, so the plan is a glimpse, not a verdict.
	Busy *flock.Holder
}

// Plan says what Apply would do with the same options: the edit is made
// in memory only, no lock is taken and nothing is written.
func (e *Engine) Plan(ctx context.Context, ws spec.Options, opts Options) (*Result, error) {
	return e.converge(ctx, resolvedOnce(ws), decided(opts), true)
}

// Apply brings one workspace to its desired state: it writes the edit,
// then executes the plan, recording every outcome.
func (e *Engine) Apply(ctx context.Context, ws spec.Options, opts Options) (*Result, error) {
	ws, opts = resolvedOnce(ws), decided(opts)
	start := e.Clock.Now()
	res, err := e.converge(ctx, ws, opts, false) // a failed create is undone within the run: rollBack
	e.audit(ctx, ws, opts, res, err, start)
	return res, err
}

// preflight fails before anything is written when a backend the run
// needs cannot be used here (limactl as root, a missing binary): such a
// run must leave no lease and no state folder behind (a root-owned
// .sandboxforge/ would block the unprivileged retry).
func (e *Engine) preflight(r *spec.Resolved, rec *state.File, targets []string) error {
	d := plan.DesiredFrom(r)
	recorded := recordedDrivers(rec)
	if len(targets) > 0 {
		for name := range d.Sandboxes {
			if !slices.Contains(targets, name) {
				delete(d.Sandboxes, name)
			}
		}
		for name := range recorded {
			if !slices.Contains(targets, name) {
				delete(recorded, name)
			}
		}
	}
	for _, name := range plan.DriversInUse(d, recorded) {
		var unavailable *drivers.UnavailableError
		if _, err := e.Drivers(name, r); errors.As(err, &unavailable) {
			return err
		}
	}
	return nil
}

// writeEdit persists the edit (editManaged); the host index then learns
// the leases r declares.
func (e *Engine) writeEdit(
	ctx context.Context,
	before *spec.Resolved,
	r *spec.Resolved,
	rec *state.File,
	edit Edit,
	now time.Time,
) error {
	if edit == nil {
		return nil
	}
	if _, err := e.editManaged(ctx, before, r, rec, edit, now); err != nil {
		return err
	}
	return e.indexLeases(ctx, r, rec)
}

// editManaged applies the edit again to the document as it is now, under
// its lock, so edits made meanwhile (an MCP call) survive, and returns the
// document as written.
func (e *Engine) editManaged(ctx context.Context, before, r *spec.Resolved, rec *state.File, edit Edit,
	now time.Time) (*spec.Managed, error) {
	c := EditContext{Resolved: before, State: rec, Now: now}
	var doc *spec.Managed
	err := spec.EditManaged(ctx, r, e.holder(), func(m *spec.Managed) error { doc = m; return edit(m, c) })
	if err != nil {
		return nil, fmt.Errorf("writing the desired state: %w", err)
	}
	return doc, nil
}

func (e *Engine) runner(r *spec.Resolved) func(driver, instance string) (guest.Runner, error) {
	return func(driver, instance string) (guest.Runner, error) {
		d, err := e.Drivers(driver, r)
		if err != nil {
			return nil, err
		}
		return executor.RunnerFor(d, driver, instance)
	}
}

func (e *Engine) lister(r *spec.Resolved) func(string) (Lister, error) {
	return func(name string) (Lister, error) { return e.Drivers(name, r) }
}

// admission counts every sbf instance the workspace's drivers (and its
// pools') list; a sandbox's VM past the cap deletes a spare first.
func (e *Engine) admission(r *spec.Resolved, d plan.Desired, rec *state.File) executor.Admitter {
	if e.HostDir == "" {
		return nil
	}
	names := observedDrivers(d, rec)
	index := e.index() // opens the ledger too
	var source string
	if c, ok := r.CeilingOf("max_instances"); ok && c.ValueFrom == spec.FromCeiling {
		source = c.Source
	}
	return &admission.Host{
		MaxSource: source,
		Evict: func(ctx context.Context, listed []drivers.Instance, inFlight func(string) bool) (bool, error) {
			return e.evictSpare(ctx, r, listed, inFlight)
		},
		Dir:    e.HostDir,
		Index:  index,
		Ledger: e.ledger,
		Max:    r.Config.Lease.MaxInstances,
		Clock:  e.Clock,
		Who:    e.holder(),
		List: func(ctx context.Context) ([]drivers.Instance, error) {
			var all []drivers.Instance
			for _, n := range names {
				drv, err := e.Drivers(n, r)
				if err != nil {
					return nil, err
				}
				readcount.Add(readcount.ListCap)
				list, err := drv.List(ctx)
				if err != nil {
					return nil, err
				}
				for _, inst := range list {
					inst.Driver = n
					all = append(all, inst)
				}
			}
			return all, nil
		},
	}
}

// locks takes the run's sandbox locks as the engine was told to wait.
func (e *Engine) locks() admission.Locks {
	return admission.Locks{Timeout: e.LockTimeout, Who: e.holder()}
}

func (e *Engine) holder() flock.Holder {
	h := e.Who
	if h.Since.IsZero() {
		h.Since = e.Clock.Now().UTC()
	}
	return h
}

func recordedDrivers(rec *state.File) map[string]string {
	out := map[string]string{}
	for name, sb := range rec.Sandboxes {
		if !sb.Phase.Terminal() && sb.Driver != "" {
			out[name] = sb.Driver
		}
	}
	return out
}

func nextExpiry(d plan.Desired, now time.Time) time.Time {
	var next time.Time
	for _, sb := range d.Sandboxes {
		if sb.Lease != nil && now.Before(sb.Lease.ExpiresAt) && (next.IsZero() || sb.Lease.ExpiresAt.Before(next)) {
			next = sb.Lease.ExpiresAt
		}
	}
	return next
}

// problemsError reports sandboxes the planner could not decide about,
// keeping the first backend's guidance reachable with errors.As.
func problemsError(p *plan.Plan) error {
	var errs []error
	for _, pr := range p.Problems {
		errs = append(errs, fmt.Errorf("sandbox %s: %w", pr.Sandbox, pr.Err))
	}
	return errors.Join(errs...)
}

// SortedSandboxes lists a result's sandbox names: declared and recorded.
func (r *Result) SortedSandboxes() []string {
	seen := make(map[string]bool, max(len(r.Resolved.Config.Sandboxes), len(r.recorded.Sandboxes)))
	for n := range r.Resolved.Config.Sandboxes {
		seen[n] = true
	}
	for n := range r.recorded.Sandboxes {
		seen[n] = true
	}
	out := make([]string, 0, len(seen))
	for n := range seen {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

func warningsOf(docs ...*spec.Resolved) []string {
	var out []string
	for _, r := range docs {
		for _, w := range r.Warnings {
			if msg := w.Error(); !slices.Contains(out, msg) {
				out = append(out, msg)
			}
		}
	}
	return out
}
