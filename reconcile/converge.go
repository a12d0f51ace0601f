package reconcile

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"time"

	"github.com/sandboxforge/sbf/internal/flock"
	"github.com/sandboxforge/sbf/reconcile/admission"
	"github.com/sandboxforge/sbf/reconcile/executor"
	"github.com/sandboxforge/sbf/reconcile/plan"
	"github.com/sandboxforge/sbf/spec"
	"github.com/sandboxforge/sbf/state"
)

// run is one convergence on its way: what it read and decided so far.
type run struct {
	ws       spec.Options
	opts     Options
	planOnly bool
	now      time.Time
	root, id string
	dir      string
	rec      *state.File
	before   *spec.Resolved // the desired state before the request's edit
	r        *spec.Resolved // after it
	edit     Edit
	store    *state.Store
	looked   *state.Looked // the request's first look at the state
	locks    *admission.Held
	waited   []string           // the sandboxes a first plan acted on (lockActedOn)
	reserved reserved           // the slots the run reserved under the instance cap
	renewing bool               // its first plan renews leases it holds no lock for (plan.RenewalsAlone)
	warming  *executor.Executor // whose adopts connect ahead of their first commands (settle)
	adopted  bool               // it took spares: the loops refill once the connections are made
}

func (e *Engine) converge(ctx context.Context, ws spec.Options, opts Options, planOnly bool) (*Result, error) {
	u, err := e.begin(ctx, ws, opts, planOnly)
	if u != nil {
		defer u.release() // the sandbox locks the run took, whenever it took them
		defer e.settle(u)
		defer e.unreserve(ctx, u)
	}
	if u != nil && u.store != nil {
		defer u.store.Close() // state.json whole again once the run is done
	}
	if err != nil {
		return nil, err
	}
	res := &Result{Resolved: u.r, recorded: u.rec, Warnings: warningsOf(u.before, u.r), Busy: u.busy()}
	if isPools(opts.Intent) {
		return e.convergePools(ctx, u, res)
	}
	return e.convergeSandboxes(ctx, u, res)
}

// begin reads and decides what a run needs before it plans: the desired
// state with the request's edit, the backends it needs (a run that cannot
// use one writes nothing), and then — since other runs may have finished
// meanwhile — the state and the managed overrides once more. The locks of
// the sandboxes it acts on are taken once a first plan names them
// (lockActedOn).
func (e *Engine) begin(ctx context.Context, ws spec.Options, opts Options, planOnly bool) (*run, error) {
	u := &run{ws: ws, opts: opts, planOnly: planOnly, now: e.Clock.Now()}
	var err error
	if h := opts.read; h != nil { // the request read them already: one load per request
		u.now, u.root, u.id, u.looked, u.before = h.now, h.r.Root, h.r.WorkspaceID, h.looked, h.r
		u.rec = u.looked.File
	} else if u.looked, u.before, err = e.read(ws, u.now); err != nil {
		return nil, err
	} else {
		u.rec = u.looked.File
		u.root, u.id = u.before.Root, u.before.WorkspaceID
	}
	u.dir = filepath.Join(u.root, spec.Dir)
	if err = u.applyRequest(e); err != nil {
		return nil, err
	}
	if !planOnly {
		if err := e.preflight(u.r, u.rec, opts.Targets); err != nil {
			return nil, err
		}
		if err := e.reserveAtCap(ctx, u); err != nil {
			return u, err
		}
	}
	// Other runs may have finished meanwhile: what they changed is read
	// again (only that, when the request looked already).
	firstRec, firstBefore := u.rec, u.before
	if planOnly {
		if u.looked, err = u.looked.Again(); err != nil {
			return u, err
		}
		u.rec = u.looked.File
	} else {
		if u.store, err = state.OpenAfter(ctx, u.looked, e.holder(), e.LockTimeout); err != nil {
			return u, err
		}
		if err := e.forgetEnded(ctx, u); err != nil {
			return u, err
		}
		u.store.Archive(func(name string) bool { // as the run leaves the desired state
			_, declared := u.r.Config.Sandboxes[name]
			return !declared && (isPools(opts.Intent) || u.locks.Holds(name)) // a record the run holds
		})
		u.rec = u.store.SnapshotAfter(u.looked)
	}
	if u.before, err = u.before.Fresh(); err != nil { // re-read only if another run edited it
		return u, err
	}
	if planOnly && opts.Ended {
		if u.rec, err = state.WithEnded(u.dir, u.rec); err != nil {
			return u, err
		}
	}
	if u.rec == firstRec && u.before == firstBefore {
		return u, nil // nobody changed what the request's edit was decided on: it stands
	}
	return u, u.applyRequest(e)
}

// forgetEnded drops the archived records of ended sandboxes that outlived
// [lease] keep_records, and their host index entries: what the planner
// does for the records a run reads (Refresh to Forgotten).
func (e *Engine) forgetEnded(ctx context.Context, u *run) error {
	gone, err := u.store.ForgetEnded(ctx, u.before.Config.Lease.KeepRecords.Std(), u.now)
	if err != nil || len(gone) == 0 || e.HostDir == "" {
		return err
	}
	if err := e.index().RemoveAll(ctx, gone); err != nil {
		return fmt.Errorf("updating the host instance index: %w", err)
	}
	return nil
}

// read is what a request reads first: the state file, then the desired
// state as of now (a hand-edited lease end is clamped to what max_ttl
// allows from now).
func (e *Engine) read(ws spec.Options, now time.Time) (*state.Looked, *spec.Resolved, error) {
	root, id, err := ws.Identity()
	if err != nil {
		return nil, nil, err
	}
	rec, err := state.Look(filepath.Join(root, spec.Dir), root, id)
	if err != nil {
		return nil, nil, err
	}
	ws.Root, ws.ID, ws.Now = root, id, now
	r, err := e.Load(ws)
	return rec, r, err
}

// firstRead is a request's first read of its workspace, handed to the
// run it starts so that run does not read the files again.
type firstRead struct {
	now    time.Time
	r      *spec.Resolved
	looked *state.Looked
}

// applyRequest decides the request's edit on the desired state as read
// and resolves the desired state after it, in memory only.
func (u *run) applyRequest(e *Engine) error {
	u.r = u.before
	var err error
	if u.edit, err = e.intentEdit(u.opts.Intent, u.before, u.rec, u.now); err != nil {
		return err
	}
	if u.edit == nil {
		return nil
	}
	managed, err := u.before.Managed()
	if err != nil {
		return err
	}
	if err := u.edit(managed, EditContext{Resolved: u.before, State: u.rec, Now: u.now}); err != nil {
		return err
	}
	u.r, err = u.before.WithManaged(managed)
	return err
}

// targets are what the run may act on: its targets, or, once it took the
// locks of the sandboxes a first plan acts on (lockActedOn), those of them
// it holds (less those another run holds, that a loop pass leaves alone);
// none says that leaves nothing, not even a lease to renew.
func (u *run) targets() (targets []string, none bool) {
	if u.planOnly || u.locks == nil {
		return u.opts.Targets, false
	}
	var held []string
	for _, name := range u.locks.Names() {
		if plan.Targeted(u.opts.Targets, name) {
			held = append(held, name)
		}
	}
	return held, len(held) == 0 && !u.renewing
}

// release lets go of the sandbox locks the run took.
func (u *run) release() {
	if u.locks != nil {
		u.locks.Release()
	}
}

// busy names a run that held a sandbox while this one planned.
func (u *run) busy() *flock.Holder {
	if u.locks == nil {
		return nil
	}
	for _, h := range u.locks.Busy() {
		return h
	}
	return nil
}

func lockModeOf(opts Options, planOnly bool) admission.Mode {
	switch {
	case planOnly:
		return admission.PeekBusy
	case isLoopPass(opts.Intent):
		return admission.SkipBusy
	}
	return admission.WaitBusy
}

// convergeSandboxes plans the workspace's sandboxes and, unless only a
// plan is asked for, carries the plan out. The first plan is made holding
// no sandbox's lock; the run then takes the locks of the sandboxes that
// plan acts on and, if there are any, plans again from what the state and
// the backends say under them (lockActedOn): a converged workspace costs
// no lock of its sandboxes.
func (e *Engine) convergeSandboxes(ctx context.Context, u *run, res *Result) (*Result, error) {
	// A run that could not plan (a layer it cannot resolve, a lock it cannot
	// take) has no plan to show: the doors report the error alone.
	look, done, err := e.planSandboxes(ctx, u, res, nil)
	if err != nil {
		return nil, err
	} else if done {
		return res, nil
	}
	again, err := e.lockActedOn(ctx, u, res, look.found)
	if err != nil {
		return nil, err
	}
	if again {
		first := look
		if look, done, err = e.planSandboxes(ctx, u, res, &first); err != nil {
			return nil, err
		} else if done {
			return res, nil
		}
	}
	r, rec, desired, layers := u.r, u.rec, look.desired, look.layers
	if u.opts.Saved != nil {
		if err := u.opts.Saved.check(rec, res.Plan); err != nil {
			return res, err
		}
	}
	if u.planOnly {
		return res, problemsError(res.Plan)
	}
	if err := admission.FitOnHost(e.Probe, res.Plan, r); err != nil {
		return res, err
	}
	if u.edit != nil && blockedRequest(u.opts.Intent, res.Plan) {
		// Nothing the request asks about can be converged now (its backend
		// cannot list, a policy it cannot enforce): no lease is taken for it.
		return res, problemsError(res.Plan)
	}
	if ok, err := e.confirm(ctx, u, res); !ok {
		return res, err
	}
	exec := e.executor(ctx, u, desired)
	exec.Layers, exec.NoWait = layers, u.opts.NoWait
	applyErr := exec.Apply(ctx, res.Plan)
	outcome := exec.Outcome()
	res.Applied, res.recorded, res.Outcome = true, u.store.SnapshotAfter(u.looked), &outcome
	if len(res.Plan.Actions) > 0 {
		res.Observed = e.observeAfter(ctx, r, desired, res.recorded, res.Observed, res.Plan)
	}
	u.warming = exec
	res.Warnings = append(res.Warnings, e.recordLeases(ctx, u, res)...)
	if res.Plan.Adopts() {
		// The host index learns the instances adopted; loops refill.
		applyErr = errors.Join(applyErr, e.indexLeases(ctx, r, res.recorded))
		u.adopted = true
	}
	applyErr = errors.Join(applyErr, e.pruneIndex(ctx, r, res.recorded, res.Plan.Forgotten()))
	if applyErr != nil {
		exec.Warmed() // a rollback may delete what an adopt is connecting to
		applyErr = errors.Join(applyErr, e.rollBack(ctx, u, res))
	}
	return res, errors.Join(applyErr, problemsError(res.Plan))
}

// settle waits, once the run's writes are done, for the connections its
// adopts opened ahead of their sandboxes' first commands (so the answer
// finds them made, and they outlive no run), then tells the loops to
// refill: a refill's boot beside that connection would take the host's
// cores it needs.
func (e *Engine) settle(u *run) {
	if u.warming != nil {
		u.warming.Warmed()
	}
	if u.adopted {
		e.adoptions.notify()
	}
}

// nothingHeld is the result of a run every sandbox of which is another
// run's for now: the next pass looks again.
func (u *run) nothingHeld(res *Result, desired plan.Desired) *Result {
	res.Plan, res.Desired, res.Now = &plan.Plan{}, desired, u.now
	return res
}

// confirm shows the plan to the door's confirmation, then writes the
// request's edit: nothing is written unless the plan goes ahead.
func (e *Engine) confirm(ctx context.Context, u *run, res *Result) (bool, error) {
	if u.opts.Confirm != nil && !res.Plan.Empty() {
		ok, err := u.opts.Confirm(res.Plan)
		if err != nil || !ok {
			return false, err
		}
	}
	if err := e.writeEdit(ctx, u.before, u.r, u.rec, u.edit, u.now); err != nil {
		return false, err
	}
	return true, nil
}

func (e *Engine) executor(ctx context.Context, u *run, desired plan.Desired) *executor.Executor {
	r := u.r
	return &executor.Executor{
		Drivers:     func(name string) (Driver, error) { return e.Drivers(name, r) },
		Record:      u.store,
		Clock:       e.Clock,
		Admit:       u.reserved.noting(e.admission(r, desired, u.rec)),
		Parallelism: e.Parallelism,
		Events:      e.eventsOf(ctx, r.Root),
		WorkspaceID: u.id,
		HostDir:     e.HostDir,
		Who:         e.holder(),
	}
}

// blockedRequest says whether every sandbox a request names has a problem
// in the plan, so that carrying it out could only record leases for VMs
// nobody can make.
func blockedRequest(in Intent, p *plan.Plan) bool {
	if len(in.named()) == 0 || len(p.Problems) == 0 {
		return false
	}
	for _, name := range in.named() {
		if !slices.ContainsFunc(p.Problems, func(pr plan.Problem) bool { return pr.Sandbox == name }) {
			return false
		}
	}
	return true
}

// isLoopPass says whether a run is the loop's: it leaves busy sandboxes
// alone rather than waiting for them.
func isLoopPass(in Intent) bool {
	_, ok := in.(Reconcile)
	return ok
}
