package executor

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/reconcile/plan"
)

// fromTemplate starts the create's VM from the memory template the plan
// chose, as a fork starts a child: running without a boot, with its own
// identity, and its lease on it from its first write. It reports whether
// the VM runs. When the template cannot serve (deleted meanwhile, a
// backend error) what it made is removed and the create boots instead; a
// create cancelled meanwhile ends with ctx's error.
func (e *Executor) fromTemplate(ctx context.Context, drv Driver, a plan.Action) (bool, error) {
	tpl := drivers.CapabilitiesOf(drv).Templates
	if a.Template == "" || tpl == nil {
		return false, nil
	}
	err := startFromTemplate(ctx, tpl, a, e.Clock.Now())
	if err == nil {
		return true, nil
	}
	if rerr := RemoveHalfMade(context.WithoutCancel(ctx), drv, a.Instance); rerr != nil {
		drivers.Progressf(ctx, "removing what the template start left: %v", rerr)
	}
	if ctx.Err() != nil {
		return false, ctx.Err()
	}
	drivers.Progressf(ctx, "starting %s from memory template %s failed (%v); booting it instead", a.Instance,
		a.Template, err)
	return false, nil
}

func startFromTemplate(ctx context.Context, tpl drivers.Templater, a plan.Action, now time.Time) error {
	img, err := tpl.OpenTemplate(ctx, a.Template)
	if err != nil {
		return err
	}
	defer img.Release(context.WithoutCancel(ctx))
	id, err := drivers.NewForkIdentity(a.Instance, now)
	if err != nil {
		return err
	}
	s := *a.Spec
	s.LeaseEnd = a.ExpiresAt
	drivers.Progressf(ctx, "starting %s from memory template %s", a.Instance, a.Template)
	if err := img.StartChild(ctx, drivers.ForkChild{Spec: s, Identity: id}); err != nil {
		return fmt.Errorf("starting from memory template %s: %w", a.Template, err)
	}
	return nil
}

// RemoveHalfMade halts (where the backend can) and deletes an instance a
// start cut short (a fork's child, a create from a template); one never
// made is not there to delete.
func RemoveHalfMade(ctx context.Context, drv Driver, instance string) error {
	if fs := drivers.CapabilitiesOf(drv).ForceStop; fs != nil {
		_ = fs.ForceStop(ctx, instance)
	}
	if err := drv.Delete(ctx, instance); err != nil && !errors.Is(err, drivers.ErrNotFound) {
		return err
	}
	return nil
}
