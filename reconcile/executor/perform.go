package executor

import (
	"context"
	"errors"
	"fmt"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/internal/clock"
	"github.com/sandboxforge/sbf/reconcile/plan"
	"github.com/sandboxforge/sbf/state"
)

// run performs one action, the step-th of its plan, and records its
// outcome.
func (e *Executor) run(ctx context.Context, a plan.Action, step int) error {
	// How long an action took is real time: e.Clock may be pinned (SBF_NOW)
	// or fake, and a step of minutes would show as "done (0s)".
	start := clock.Real{}.Now()
	who := a.Sandbox
	if who == "" {
		who = a.Subject() + " " + a.Instance // a spare
	}
	e.emit(Event{Sandbox: who, Kind: a.Kind, Step: step})
	ctx = drivers.WithProgress(ctx, func(msg string) {
		e.emit(Event{Sandbox: who, Kind: a.Kind, Step: step, Message: msg})
	})
	err := e.perform(ctx, a)
	if err != nil && a.Sandbox == "" {
		err = fmt.Errorf("%s: %s %s: %w", a.Subject(), a.Kind, a.Instance, err)
	} else if err != nil {
		err = fmt.Errorf("sandbox %s: %s: %w", a.Sandbox, a.Kind, err)
		if rerr := e.note(a, func(rec *state.Sandbox) {
			rec.Phase, rec.LastError = state.Failed, err.Error()
		}); rerr != nil {
			err = errors.Join(err, rerr)
		}
	}
	// The step's state changes are committed together, with those of the
	// steps that ended meanwhile (state.Store.Sync).
	if serr := e.Record.Sync(); serr != nil {
		err = errors.Join(err, fmt.Errorf("recording %s of %s: %w", a.Kind, who, serr))
	}
	e.emit(Event{Sandbox: who, Kind: a.Kind, Step: step, Done: true, Err: err, Elapsed: clock.Real{}.Now().Sub(start)})
	return err
}

func (e *Executor) perform(ctx context.Context, a plan.Action) error {
	drv, err := e.Drivers(a.Driver)
	if err != nil {
		return err
	}
	if a.Sandbox == "" {
		return e.performSpare(ctx, drv, a)
	}
	switch a.Kind {
	case plan.Adopt:
		return e.adopt(ctx, drv, a)
	case plan.Create:
		return e.create(ctx, drv, a)
	case plan.Start:
		if err := drv.Start(ctx, *a.Spec); err != nil {
			return err
		}
		return e.note(a, running(a))
	case plan.Update:
		if a.WasRunning {
			if err := drv.Stop(ctx, a.Instance); err != nil {
				return fmt.Errorf("stopping before the change: %w", err)
			}
		}
		if err := drv.Reconfigure(ctx, *a.Spec); err != nil {
			return err
		}
		if err := drv.Start(ctx, *a.Spec); err != nil {
			return err
		}
		return e.note(a, running(a))
	case plan.Replace:
		old, err := e.Drivers(a.OldDriver)
		if err != nil {
			return err
		}
		if err := removeAs(ctx, old, a); err != nil {
			return fmt.Errorf("deleting the old instance: %w", err)
		}
		if err := e.noteTx(a, func(tx *state.Tx, _ *state.Sandbox) { dropSnapshots(tx, a.Sandbox) }); err != nil {
			return err
		}
		return e.create(ctx, drv, a)
	case plan.Runtime, plan.Services, plan.Env, plan.Compose:
		return e.performLayer(ctx, drv, a)
	case plan.Delete, plan.Expire:
		if err := e.endTasks(ctx, drv, a); err != nil {
			return err
		}
		if err := removeAs(ctx, drv, a); err != nil {
			return err
		}
		if g, ok := e.Admit.(interface {
			Gone(context.Context, string) error
		}); ok {
			g.Gone(ctx, a.Instance) // best effort: a full count at the cap finds it gone anyway
		}
		phase := state.Destroyed
		if a.Kind == plan.Expire {
			phase = state.Expired
		}
		return e.noteTx(a, func(tx *state.Tx, rec *state.Sandbox) {
			rec.Phase, rec.LastError, rec.SSH = phase, "", ""
			if a.ExpiresAt != nil {
				rec.ExpiresAt = a.ExpiresAt
			}
			dropSnapshots(tx, a.Sandbox) // they went with the VM
		})
	}
	return fmt.Errorf("unknown action %q", a.Kind)
}

// create records the sandbox as creating before touching the backend, so
// a crash mid-create leaves a record the next plan repairs from the world.
func (e *Executor) create(ctx context.Context, drv Driver, a plan.Action) error {
	if err := e.note(a, func(rec *state.Sandbox) { rec.Phase = state.Creating }); err != nil {
		return err
	}
	if e.Admit != nil {
		release, err := e.Admit.Admit(ctx, a.Instance)
		if err != nil {
			return err
		}
		defer release()
	}
	started, err := e.fromTemplate(ctx, drv, a)
	if err != nil {
		return err
	}
	if !started {
		if err := makeVM(ctx, drv, a); err != nil {
			return err
		}
		if err := drv.Start(ctx, *a.Spec); err != nil {
			return err
		}
	}
	now := e.Clock.Now().UTC()
	return e.note(a, func(rec *state.Sandbox) {
		running(a)(rec)
		rec.CreatedAt = &now
	})
}

// makeVM creates the action's VM, stopped: from its image, or as a copy
// of its source's disk. The VM is made with its lease end (Spec.LeaseEnd),
// so a backend that keeps leases on its instances never holds one without.
func makeVM(ctx context.Context, drv Driver, a plan.Action) error {
	s := *a.Spec
	s.LeaseEnd = a.ExpiresAt
	if a.Source == nil {
		return drv.Create(ctx, s)
	}
	cl := drivers.CapabilitiesOf(drv).Clone
	if cl == nil {
		return drivers.NoSnapshots(a.Driver)
	}
	return cl.Clone(ctx, a.Source.Spec, a.Source.Snapshot, s)
}

// remove stops then deletes an instance; one already gone is fine.
func remove(ctx context.Context, drv Driver, instance string) error {
	return removeWith(ctx, drv, drv.Stop, instance)
}

// removeAs removes the action's instance as the plan says: stopped
// cleanly first, or, when the action is forced, halted at once where the
// backend can (ForceStopper) and deleted (a backend's Delete removes a
// running instance itself: drivertest's contract).
func removeAs(ctx context.Context, drv Driver, a plan.Action) error {
	if !a.Force {
		return remove(ctx, drv, a.Instance)
	}
	halt := func(context.Context, string) error { return nil }
	if f := drivers.CapabilitiesOf(drv).ForceStop; f != nil {
		halt = f.ForceStop
	}
	return removeWith(ctx, drv, halt, a.Instance)
}

// removeWith is remove stopping with stop.
func removeWith(ctx context.Context, drv Driver, stop func(context.Context, string) error, instance string) error {
	stopErr := stop(ctx, instance)
	err := drv.Delete(ctx, instance)
	if err == nil || errors.Is(err, drivers.ErrNotFound) {
		return nil
	}
	if stopErr != nil && !errors.Is(stopErr, drivers.ErrNotFound) {
		return errors.Join(err, fmt.Errorf("stopping first: %w", stopErr))
	}
	return err
}

func running(a plan.Action) func(*state.Sandbox) {
	return func(rec *state.Sandbox) {
		rec.Phase, rec.LastError = state.Running, ""
		if a.Spec != nil {
			rec.VM = state.RecordOf(*a.Spec)
		}
		if a.ExpiresAt != nil {
			rec.ExpiresAt = a.ExpiresAt
		}
	}
}
