package reconcile

import (
	"context"
	"errors"
	"fmt"

	"github.com/sandboxforge/sbf/reconcile/plan"
	"github.com/sandboxforge/sbf/state"
)

// rollBack undoes the creates of a run that failed (Options.rollback: an
// Up, a clone) or that was cancelled mid-step (a second Ctrl-C, a client that gave
// up: a VM it was booting must not run on, recorded failed, until someone
// destroys it). It is a plan of its own, carried out within the run: the
// run still holds those sandboxes' locks and the state file, so nothing
// acts on them between the failure and its undoing, and nothing is read
// again but what the undoing changed. Their leases are dropped and what
// was made of them deleted, so a failed `sbf up` or create_instance leaves
// nothing behind; a record that never had a VM is forgotten.
func (e *Engine) rollBack(ctx context.Context, u *run, res *Result) error {
	failed := failedCreates(res)
	if len(failed) == 0 || !u.opts.rollback && ctx.Err() == nil {
		return nil
	}
	undo := WithStop(context.WithoutCancel(ctx), nil) // undone whatever stopped the run
	if err := e.undoCreates(undo, u, res, failed, ctx.Err() != nil); err != nil {
		return fmt.Errorf("rolling back %v: %w", failed, err)
	}
	res.RolledBack = failed
	return nil
}

// failedCreates are the sandboxes whose VM the run was making and whose
// record says the step failed. An import is never deleted for failing.
func failedCreates(res *Result) []string {
	var failed []string
	for _, a := range res.Plan.Actions {
		made := a.Kind == plan.Create || a.Kind == plan.Replace || a.Kind == plan.Adopt && !a.Import
		if rec := res.recorded.Sandboxes[a.Sandbox]; made && rec != nil && rec.Phase == state.Failed {
			failed = append(failed, a.Sandbox)
		}
	}
	return failed
}

// undoCreates drops the leases of failed, plans their deletion from what
// the run saw last (looked at again when the run was cancelled: its look
// then failed and shows no VM) and carries it out; res then says what is
// left. A sandbox it could not plan for is an error: nothing claims it
// undone.
func (e *Engine) undoCreates(ctx context.Context, u *run, res *Result, failed []string, cancelled bool) error {
	// The plan is made from the document as written (edits made meanwhile
	// included); the host index learns the leases it declares.
	doc, err := e.editManaged(ctx, u.r, u.r, res.recorded, destroyEdit(failed), u.now)
	if err != nil {
		return err
	}
	r, err := u.r.WithManaged(doc)
	if err != nil {
		return err
	}
	if err := e.indexLeases(ctx, r, res.recorded); err != nil {
		return err
	}
	u.r = r // the run's end archives the records of what is no longer declared
	desired := plan.DesiredFrom(r)
	desired.Force = true // what a failed create made never ran a workload: no clean stop is owed
	if cancelled || len(res.Observed.Unavailable) > 0 {
		res.Observed = e.observe(ctx, r, desired, res.recorded)
	}
	p := plan.ComputeFor(desired, res.recorded, res.Observed, u.now, failed).Only(failed)
	exec := e.executor(ctx, u, desired)
	applyErr := errors.Join(exec.Apply(ctx, p), problemsError(p))
	res.Resolved, res.recorded = r, u.store.SnapshotAfter(u.looked)
	if len(p.Actions) > 0 {
		res.Observed = e.observeAfter(ctx, r, desired, res.recorded, res.Observed, p)
	}
	exec.Warmed()
	if applyErr != nil {
		return applyErr
	}
	never, err := forgetNeverMade(u, res, failed)
	return errors.Join(err, e.pruneIndex(ctx, r, res.recorded, append(p.Forgotten(), never...)))
}

// forgetNeverMade drops the records of rolled-back sandboxes that never
// had a VM (a create refused at the cap): nothing was made, so nothing is
// kept for keep_records; their host index entries go too (the caller's).
func forgetNeverMade(u *run, res *Result, names []string) ([]string, error) {
	var never []string
	for _, name := range names {
		if rec := res.recorded.Sandboxes[name]; rec != nil && rec.CreatedAt == nil && rec.VM == nil &&
			rec.Phase.Terminal() {
			never = append(never, name)
		}
	}
	if len(never) == 0 {
		return nil, nil
	}
	err := u.store.Write(func(tx *state.Tx) {
		for _, name := range never {
			tx.Sandbox(name).Phase = state.Forgotten
		}
	})
	if err != nil {
		return nil, fmt.Errorf("forgetting %v, never made: %w", never, err)
	}
	res.recorded = u.store.SnapshotAfter(u.looked)
	return never, nil
}
