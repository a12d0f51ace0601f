package reconcile

import (
	"context"

	"github.com/sandboxforge/sbf/reconcile/plan"

	"github.com/sandboxforge/sbf/drivers"
)

// Lister is the part of a driver observation needs.
type Lister interface {
	List(ctx context.Context) ([]drivers.Instance, error)
}

// Observe lists each driver once (the planner keeps what belongs to this
// workspace: see plan.NewObserved).
func Observe(
	ctx context.Context,
	workspaceID string,
	driverNames []string,
	get func(string) (Lister, error),
) plan.Observed {
	listed := map[string][]drivers.Instance{}
	failed := map[string]error{}
	labels := map[string]bool{}
	for _, name := range driverNames {
		if _, done := listed[name]; done || failed[name] != nil {
			continue
		}
		l, err := get(name)
		if err == nil {
			_, labels[name] = l.(drivers.Labeler)
			var list []drivers.Instance
			if list, err = l.List(ctx); err == nil {
				listed[name] = append([]drivers.Instance{}, list...)
				continue
			}
		}
		failed[name] = err
	}
	return plan.NewObserved(workspaceID, listed, failed, labels)
}

// ValidateSpecs asks each available backend that can check specs about
// the sandboxes it would run.
func ValidateSpecs(d plan.Desired, unavailable map[string]error, get func(string) (Driver, error)) map[string]error {
	out := map[string]error{}
	for name, ds := range d.Sandboxes {
		if unavailable[ds.Driver] != nil {
			continue
		}
		drv, err := get(ds.Driver)
		if err != nil {
			continue // reported as unavailable by observation
		}
		if v, ok := drv.(drivers.Validator); ok {
			if err := v.Validate(ds.VM); err != nil {
				out[name] = err
			}
		}
	}
	return out
}
