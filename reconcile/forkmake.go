package reconcile

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/internal/clock"
	"github.com/sandboxforge/sbf/internal/coded"
	"github.com/sandboxforge/sbf/reconcile/executor"
	"github.com/sandboxforge/sbf/reconcile/plan"
)

// makeChildren admits every child, saves the source once, starts the children at
// once and records those it made; what it cannot keep it deletes.
func (f *forking) makeChildren(ctx context.Context, forker drivers.Forker) error {
	e, source := f.e, f.req.Source
	after, err := f.declared(f.names)
	if err != nil {
		return err
	}
	d := plan.DesiredFrom(after)
	src, ok := d.Sandboxes[source]
	if !ok {
		return notDeclared(f.r, source)
	}
	srcSpec := src.VM
	srcSpec.Name = f.rec.Sandboxes[source].Instance
	specs := map[string]drivers.Spec{}
	for _, name := range f.names {
		s := d.Sandboxes[name].VM
		s.Name = drivers.InstanceName(f.r.WorkspaceID, name)
		specs[name] = s
	}
	if err := f.validate(ctx, d); err != nil {
		return err
	}
	if err := f.running(ctx, srcSpec.Name, src.Driver); err != nil {
		return err
	}
	if f.req.DryRun {
		for _, name := range f.names {
			f.res.Children = append(f.res.Children, ForkedChild{Sandbox: name, Instance: specs[name].Name,
				ExpiresAt: after.Config.Leases[name].ExpiresAt})
		}
		return nil
	}
	admit := e.admission(f.r, d, f.rec)
	release, err := admitAll(ctx, admit, f.names, specs)
	if err != nil {
		return err // nothing was made
	}
	defer release()
	events := e.eventsOf(ctx, f.r.Root)
	made, err := f.children(ctx, forker, srcSpec, specs, events)
	undo := context.WithoutCancel(ctx)
	if err != nil && ctx.Err() == nil {
		made = nil // a failed fork keeps nothing; a cancelled one keeps the children running
	}
	keep := slices.Clone(made)
	if len(keep) > 0 {
		if rerr := f.record(undo, keep, specs); rerr != nil {
			err, keep = errors.Join(err, rerr), nil
		}
	}
	for _, name := range f.names {
		if !slices.Contains(keep, name) {
			err = errors.Join(err, f.remove(undo, admit, src.Driver, specs[name].Name))
		}
	}
	return err
}

// validate refuses children whose backend cannot honour their spec as
// every plan checks it: a network policy (the source's, which each child
// keeps) it cannot enforce outside the guest is POLICY_UNSUPPORTED, never
// a child running open.
func (f *forking) validate(ctx context.Context, d plan.Desired) error {
	only := d
	only.Sandboxes = map[string]plan.DesiredSandbox{}
	for _, name := range f.names {
		only.Sandboxes[name] = d.Sandboxes[name]
	}
	invalid := ValidateSpecs(ctx, only, nil, func(name string) (Driver, error) { return f.e.Drivers(name, f.r) })
	for _, name := range f.names {
		if err := invalid[name]; err != nil {
			return fmt.Errorf("sandbox %s: %w", name, err)
		}
	}
	return nil
}

// running refuses a source whose VM is not running: a fork copies memory.
func (f *forking) running(ctx context.Context, instance, driver string) error {
	drv, err := f.e.Drivers(driver, f.r)
	if err != nil {
		return err
	}
	list, err := inspect(ctx, drv, instance)
	if err != nil {
		return fmt.Errorf("looking at %s: %w", instance, err)
	}
	for _, inst := range list {
		if inst.Name == instance && inst.Status == drivers.Running {
			return nil
		}
	}
	return coded.New(coded.InstanceNotReady, map[string]any{"sandbox": f.req.Source, "instance": instance},
		"sandbox %s is not running: a fork copies a running VM's memory (start it with 'sbf up %s', or clone "+
			"its disk with 'sbf clone %s')", f.req.Source, f.req.Source, f.req.Source)
}

func inspect(ctx context.Context, drv Driver, instance string) ([]drivers.Instance, error) {
	if in := drivers.CapabilitiesOf(drv).Inspect; in != nil {
		return in.Inspect(ctx, []string{instance})
	}
	return drv.List(ctx)
}

// admitAll reserves a place under the host's cap for every child before
// any is made; a refusal lets go of the places taken, so a fork refused
// at the cap leaves nothing behind.
func admitAll(ctx context.Context, admit executor.Admitter, names []string,
	specs map[string]drivers.Spec) (func(), error) {
	var releases []func()
	release := func() {
		for _, r := range releases {
			r()
		}
	}
	if admit == nil {
		return release, nil
	}
	for _, name := range names {
		rel, err := admit.Admit(ctx, specs[name].Name)
		if err != nil {
			release()
			for _, taken := range names[:len(releases)] {
				forgetAdmitted(ctx, admit, specs[taken].Name)
			}
			return nil, err
		}
		releases = append(releases, rel)
	}
	return release, nil
}

// forgetAdmitted tells the host's ledger an admitted instance was never
// made, so its place is free at once.
func forgetAdmitted(ctx context.Context, admit executor.Admitter, instance string) {
	if g, ok := admit.(interface {
		Gone(context.Context, string) error
	}); ok {
		g.Gone(ctx, instance) // best effort: a full count at the cap finds it absent anyway
	}
}

// children saves the source and starts the children at once (each waits
// mostly on its own VM: its memory read in, its guest answering); the first
// failure or the end of ctx stops the others; made are those running, in
// the order asked.
func (f *forking) children(ctx context.Context, forker drivers.Forker, src drivers.Spec,
	specs map[string]drivers.Spec, events func(Event)) (made []string, err error) {
	steps := 1 + len(f.names)
	var img drivers.ForkImage
	s := &forkSteps{events: events, steps: steps}
	began := clock.Real{}.Now()
	err = s.step(ctx, f.req.Source, ForkSave, func(ctx context.Context) (err error) {
		img, err = forker.SaveForFork(ctx, src)
		return err
	})
	f.res.Paused = clock.Real{}.Now().Sub(began)
	if p, ok := img.(drivers.PauseReporter); ok && err == nil {
		f.res.Paused = p.Paused()
	}
	if err != nil {
		if u, ok := errors.AsType[*drivers.UnsupportedError](err); ok {
			err = u.Naming(src.Name, f.req.Source)
		}
		return nil, fmt.Errorf("sandbox %s: saving its state: %w", f.req.Source, err)
	}
	defer func() { err = errors.Join(err, img.Release(context.WithoutCancel(ctx))) }()
	cctx, stop := context.WithCancel(ctx)
	defer stop()
	var wg sync.WaitGroup
	var mu sync.Mutex
	running, failed := map[string]bool{}, []error{}
	for _, name := range f.names {
		id, ierr := drivers.NewForkIdentity(specs[name].Name, f.e.Clock.Now())
		if ierr != nil {
			stop()
			failed = append(failed, ierr)
			break
		}
		child := drivers.ForkChild{Spec: specs[name], Identity: id}
		wg.Go(func() {
			err := s.step(cctx, name, ForkChild, func(ctx context.Context) error { return img.StartChild(ctx, child) })
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				stop()
				failed = append(failed, fmt.Errorf("sandbox %s: %w", name, err))
				return
			}
			running[name] = true
		})
	}
	wg.Wait()
	for _, name := range f.names {
		if running[name] {
			made = append(made, name)
		}
	}
	if ctx.Err() != nil {
		return made, fmt.Errorf("cancelled after %d of %d children: %w", len(made), len(f.names), ctx.Err())
	}
	return made, errors.Join(failed...)
}

// forkSteps numbers a fork's steps and reports each, one event at a time
// though the children start at once.
type forkSteps struct {
	mu     sync.Mutex
	events func(Event)
	n      int
	steps  int
}

func (s *forkSteps) step(ctx context.Context, who string, kind plan.Kind, do func(context.Context) error) error {
	began := clock.Real{}.Now()
	s.mu.Lock()
	s.n++
	ev := Event{Sandbox: who, Kind: kind, Step: s.n, Steps: s.steps}
	emit(s.events, ev)
	s.mu.Unlock()
	sctx := drivers.WithProgress(ctx, func(msg string) {
		withMsg := ev
		withMsg.Message = msg
		s.mu.Lock()
		defer s.mu.Unlock()
		emit(s.events, withMsg)
	})
	err := do(sctx)
	ev.Done, ev.Err, ev.Elapsed = true, err, clock.Real{}.Now().Sub(began)
	s.mu.Lock()
	defer s.mu.Unlock()
	emit(s.events, ev)
	return err
}

// remove deletes a child the fork does not keep (one it cut short, or
// every one of a failed fork); one never made is not there to delete.
func (f *forking) remove(ctx context.Context, admit executor.Admitter, driver, instance string) error {
	drv, err := f.e.Drivers(driver, f.r)
	if err != nil {
		return err
	}
	if err := executor.RemoveHalfMade(ctx, drv, instance); err != nil {
		return fmt.Errorf("deleting %s, made by a fork that did not finish: %w", instance, err)
	}
	if admit != nil {
		forgetAdmitted(ctx, admit, instance)
	}
	return nil
}

func emit(events func(Event), ev Event) {
	if events != nil {
		events(ev)
	}
}
