package main

import (
	"context"
	"time"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/kubevirt/driver"
	"github.com/sandboxforge/sbf/kubevirt/leader"
)

// fenced is the driver of a loop that serve-leader runs (sbf reconcile --watch, whose
// plugin this is): every call that writes to the cluster first proves that this replica
// still holds the Lease (leader.Fence), so a loop whose supervisor was frozen past its
// renew deadline writes nothing, whatever it goes on planning. Reads, waits and SSH are
// left as they are: they change nothing.
type fenced struct {
	*driver.Driver
	fence *leader.Fence
}

func (f fenced) check(ctx context.Context) error {
	if err := f.fence.Check(ctx); err != nil {
		return &drivers.UnavailableError{Driver: driver.Name, ProbableCause: "not_leading", Reason: err.Error(),
			NextSteps: []string{"serve-leader stops this loop; the replica holding the Lease acts"}}
	}
	return nil
}

func (f fenced) Create(ctx context.Context, s drivers.Spec) error {
	if err := f.check(ctx); err != nil {
		return err
	}
	return f.Driver.Create(ctx, s)
}

func (f fenced) Start(ctx context.Context, s drivers.Spec) error {
	if err := f.check(ctx); err != nil {
		return err
	}
	return f.Driver.Start(ctx, s)
}

func (f fenced) Stop(ctx context.Context, name string) error {
	if err := f.check(ctx); err != nil {
		return err
	}
	return f.Driver.Stop(ctx, name)
}

func (f fenced) Delete(ctx context.Context, name string) error {
	if err := f.check(ctx); err != nil {
		return err
	}
	return f.Driver.Delete(ctx, name)
}

func (f fenced) Reconfigure(ctx context.Context, s drivers.Spec) error {
	if err := f.check(ctx); err != nil {
		return err
	}
	return f.Driver.Reconfigure(ctx, s)
}

func (f fenced) MarkSpare(ctx context.Context, name string, l drivers.SpareLabel) error {
	if err := f.check(ctx); err != nil {
		return err
	}
	return f.Driver.MarkSpare(ctx, name, l)
}

func (f fenced) Claim(ctx context.Context, name string, o drivers.Owner) error {
	if err := f.check(ctx); err != nil {
		return err
	}
	return f.Driver.Claim(ctx, name, o)
}

func (f fenced) RecordLease(ctx context.Context, name string, end time.Time) error {
	if err := f.check(ctx); err != nil {
		return err
	}
	return f.Driver.RecordLease(ctx, name, end)
}
