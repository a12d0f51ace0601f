package executor

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/sandboxforge/sbf/reconcile/admission"
	"github.com/sandboxforge/sbf/reconcile/plan"
	"github.com/sandboxforge/sbf/reconcile/pools"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/drivers/guest"
	"github.com/sandboxforge/sbf/internal/coded"
	"github.com/sandboxforge/sbf/internal/flock"
	"github.com/sandboxforge/sbf/internal/readcount"
	"github.com/sandboxforge/sbf/state"
)

// claimSpare claims cand for the sandbox. A teammate's spare (a.Theirs) is admitted against
// this host's cap first, since claiming it adds an instance here, and passed over
// (errPassedOver) when this host's cap or the user's ceilings refuse it: a create of the
// sandbox's own then decides, which may make room by deleting one of this host's spares.
func (e *Executor) claimSpare(ctx context.Context, lab drivers.Labeler, a plan.Action, cand string,
	owner drivers.Owner) error {
	theirs := slices.Contains(a.Theirs, cand)
	if e.Admit != nil && theirs {
		release, err := e.Admit.Admit(ctx, cand)
		if err != nil {
			return passedOver(err)
		}
		defer release()
	}
	err := pools.Claim(ctx, e.HostDir, e.Who, lab, cand, owner)
	if err != nil && theirs {
		if g, ok := e.Admit.(interface {
			Gone(context.Context, string) error
		}); ok {
			g.Gone(ctx, cand) // admitted above, not claimed: not this host's after all
		}
		return passedOver(err)
	}
	return err
}

// errPassedOver marks a teammate's spare this sandbox may not take: the next one is tried.
var errPassedOver = errors.New("passed over")

func passedOver(err error) error {
	if coded.Of(err, coded.Unknown).Code == coded.InstanceLimit {
		return fmt.Errorf("%w: %w", errPassedOver, err)
	}
	return err
}

// adopt claims the first spare of a.Warm nobody claimed meanwhile, records
// it as the sandbox's instance, and gives it what the spare lacks (mounts,
// ports: a restart). The claim comes first: a crash after it leaves an
// instance labelled as the sandbox's, which the next plan takes up. When
// every spare was taken, it creates the VM as a create would (and makes
// the runtime ready when the plan counted on the spare's); an import
// fails instead.
func (e *Executor) adopt(ctx context.Context, drv Driver, a plan.Action) error {
	caps := drivers.CapabilitiesOf(drv)
	lab := caps.Labels
	if lab == nil {
		return fmt.Errorf("the %s driver keeps no ownership labels, so it cannot adopt %s", a.Driver, a.Instance)
	}
	owner := drivers.Owner{WorkspaceID: e.WorkspaceID, Sandbox: a.Sandbox, Spare: !a.Import, Since: e.Clock.Now().UTC()}
	got := ""
	for _, cand := range a.Warm {
		err := e.claimSpare(ctx, lab, a, cand, owner)
		if err == nil {
			got = cand
			break
		}
		if errors.Is(err, errPassedOver) {
			drivers.Progressf(ctx, "spare %s: %v", cand, err)
			continue
		}
		if a.Import || !errors.Is(err, drivers.ErrOwned) && !errors.Is(err, drivers.ErrNotFound) {
			return fmt.Errorf("adopting %s: %w", cand, err)
		}
		drivers.Progressf(ctx, "spare %s was taken meanwhile", cand)
	}
	if got == "" {
		return e.coldInstead(ctx, drv, a)
	}
	drivers.Progressf(ctx, "took warm spare %s", got)
	vm := *a.Spec
	vm.Name = got
	a.Instance, a.Spec = got, &vm
	e.adopted.Store(a.Sandbox, got)
	if err := e.note(a, func(rec *state.Sandbox) { rec.Phase, rec.LastError = state.Creating, "" }); err != nil {
		return err
	}
	switch {
	case a.Reconfigure:
		drivers.Progressf(ctx, "restarting %s with the mounts and ports it lacks", got)
		if err := drv.Stop(ctx, got); err != nil {
			return fmt.Errorf("stopping before the change: %w", err)
		}
		if err := drv.Reconfigure(ctx, vm); err != nil {
			return err
		}
		if err := drv.Start(ctx, vm); err != nil {
			return err
		}
	case !a.WasRunning:
		if err := drv.Start(ctx, vm); err != nil {
			return err
		}
	}
	if w := caps.Warm; w != nil && !a.Import {
		e.warmAhead(ctx, w, got)
	}
	now := e.Clock.Now().UTC()
	return e.note(a, func(rec *state.Sandbox) {
		running(a)(rec)
		rec.CreatedAt = &now
		if a.Docker != "" {
			setApplied(rec, "docker_command", a.Docker)
			guestOf(rec).DockerCommand = a.Docker
		}
	})
}

// warmAhead connects to an adopted spare ahead of its sandbox's first
// command, which would otherwise dial the VM with the pool's refill booting
// beside it by then. The dial goes on beside the rest of the run (its look
// at what the actions made, ~0.1 s of limactl here): Warmed waits for it.
func (e *Executor) warmAhead(ctx context.Context, w drivers.Warmer, instance string) {
	drivers.Progressf(ctx, "connecting to %s ahead of its first command", instance)
	e.warming.Go(func() {
		if err := w.Warm(ctx, instance); err != nil {
			drivers.Progressf(ctx, "connecting to %s ahead of its first command: %v", instance, err)
		}
	})
}

// Warmed waits for the connections Apply's adopts opened ahead of their
// sandboxes' first commands. Whoever calls Apply calls it before its run
// ends, so none outlives the run's context (or its progress).
func (e *Executor) Warmed() { e.warming.Wait() }

// coldInstead is an adopt whose spares were all taken: the create the
// adopt stood in for.
func (e *Executor) coldInstead(ctx context.Context, drv Driver, a plan.Action) error {
	drivers.Progressf(ctx, "no warm spare left; creating %s", a.Spec.Name)
	a.Kind, a.Instance = plan.Create, a.Spec.Name
	e.adopted.Store(a.Sandbox, a.Instance)
	if err := e.create(ctx, drv, a); err != nil {
		return err
	}
	if a.Docker == "" || e.Layers[a.Sandbox] == nil {
		return nil
	}
	// The plan left out the runtime step for the spare's ready runtime.
	rt := a
	rt.Kind, rt.Spec, rt.Docker = plan.Runtime, nil, ""
	return e.performLayer(ctx, drv, rt)
}

// performSpare makes or deletes a pool's spare.
func (e *Executor) performSpare(ctx context.Context, drv Driver, a plan.Action) error {
	lab := drivers.CapabilitiesOf(drv).Labels
	if lab == nil {
		return fmt.Errorf("the %s driver keeps no ownership labels, so it keeps no spares", a.Driver)
	}
	switch a.Kind {
	case plan.Create:
		return e.createSpare(ctx, drv, lab, a)
	case plan.Delete:
		_, err := RetireAndDelete(ctx, drv, lab, e.HostDir, e.Who, e.Clock.Now(), a.Instance)
		return err
	}
	return fmt.Errorf("unknown action %q for a spare", a.Kind)
}

// spareBoot is how long a new spare may take to boot and be made ready
// before its lease ends: a backend's boot wait is 10 minutes by default.
const spareBoot = 15 * time.Minute

// createSpare reserves the spare's name (its admission slot, a lock held
// until the spare is labelled: others see it in flight), creates and
// starts it, makes its runtime ready when asked, then labels it as a
// ready spare. A spare that failed halfway is deleted; one a crash left
// unlabelled is deleted by the next pass, its reservation gone.
func (e *Executor) createSpare(ctx context.Context, drv Driver, lab drivers.Labeler, a plan.Action) error {
	if e.Admit != nil {
		release, err := e.Admit.Admit(ctx, a.Instance)
		if errors.Is(err, admission.ErrInFlight) {
			drivers.Progressf(ctx, "another sbf is making %s", a.Instance)
			return nil
		}
		if err != nil {
			return err
		}
		defer release()
	}
	readcount.Add(readcount.List)
	if list, err := drv.List(ctx); err == nil {
		for _, inst := range list {
			if inst.Name == a.Instance {
				drivers.Progressf(ctx, "another sbf made %s meanwhile", a.Instance)
				return nil
			}
		}
	}
	// A spare's lease is its idle time, counted from a boot that may take
	// up to spareBoot: its labelling moves the end to IdleUntil (a backend
	// keeping leases writes it there), its claim to the sandbox's lease.
	s := *a.Spec
	end := e.Clock.Now().UTC().Add(spareBoot + a.Spare.MaxIdle)
	s.LeaseEnd = &end
	if err := drv.Create(ctx, s); err != nil {
		return err
	}
	done := false
	defer func() {
		if !done {
			remove(context.WithoutCancel(ctx), drv, a.Instance) // best effort; the next pass retries
		}
	}()
	if err := drv.Start(ctx, *a.Spec); err != nil {
		return err
	}
	docker := ""
	if a.Spare.Runtime {
		if r, err := RunnerFor(drv, a.Driver, a.Instance); err == nil { // none on the sim: nothing runs there
			drivers.Progressf(ctx, "making the container runtime ready")
			if docker, err = guest.EnsureRuntime(ctx, r, a.Spare.Install); err != nil {
				return fmt.Errorf("making the container runtime ready: %w", err)
			}
		}
	}
	if a.Spare.Memory {
		tpl := drivers.CapabilitiesOf(drv).Templates
		if tpl == nil {
			return fmt.Errorf("the %s driver cannot keep memory templates", a.Driver)
		}
		drivers.Progressf(ctx, "saving %s's memory as the pool's template", a.Instance)
		if err := tpl.SaveTemplate(ctx, *a.Spec); err != nil {
			return err
		}
	}
	now := e.Clock.Now().UTC()
	if err := lab.MarkSpare(ctx, a.Instance, drivers.SpareLabel{Pool: a.Spare.Pool, Workspace: a.Spare.Workspace,
		Shape: a.Spare.Shape, CreatedAt: now, IdleUntil: now.Add(a.Spare.MaxIdle), Docker: docker,
		Memory: a.Spare.Memory}); err != nil {
		return err
	}
	done = true
	return nil
}

// RetireAndDelete retires a spare (pools.Retire), then deletes it, and
// says whether it did. One a sandbox adopted since it was seen is left to
// its owner.
func RetireAndDelete(
	ctx context.Context,
	drv Driver,
	lab drivers.Labeler,
	hostDir string,
	who flock.Holder,
	now time.Time,
	instance string,
) (bool, error) {
	if retired, err := pools.Retire(ctx, lab, hostDir, who, now, instance); !retired {
		return false, err
	}
	return true, remove(ctx, drv, instance)
}
