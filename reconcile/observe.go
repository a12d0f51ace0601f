package reconcile

import (
	"context"

	"github.com/sandboxforge/sbf/drivers"
)

// Observed is what the backends report about this workspace's instances.
type Observed struct {
	// Instances are this workspace's managed instances, by instance name.
	Instances map[string]drivers.Instance
	// Unavailable holds, per driver, why it could not be listed; the
	// planner leaves that driver's sandboxes alone rather than guess.
	Unavailable map[string]error
	// Guests is what running sandboxes' guests report, by sandbox.
	Guests map[string]*GuestObserved
	// EnvOK says, per host .env file, whether it already holds the
	// connection variables.
	EnvOK map[string]bool
	// Invalid holds, by sandbox, what its backend cannot honour in its
	// spec (drivers.Validator): a plan problem, never an action.
	Invalid map[string]error
}

// Lister is the part of a driver observation needs.
type Lister interface {
	List(ctx context.Context) ([]drivers.Instance, error)
}

// Observe lists each driver once and keeps the instances whose derived
// name belongs to this workspace. Everything else is never looked at again.
func Observe(ctx context.Context, workspaceID string, driverNames []string, get func(string) (Lister, error)) Observed {
	obs := Observed{Instances: map[string]drivers.Instance{}, Unavailable: map[string]error{}}
	tag := drivers.WorkspaceTag(workspaceID)
	for _, name := range driverNames {
		l, err := get(name)
		if err == nil {
			var list []drivers.Instance
			if list, err = l.List(ctx); err == nil {
				for _, inst := range list {
					if t, _, ok := drivers.ParseInstanceName(inst.Name); ok && t == tag {
						inst.Driver = name
						obs.Instances[inst.Name] = inst
					}
				}
				continue
			}
		}
		obs.Unavailable[name] = err
	}
	return obs
}

// ValidateSpecs asks each available backend that can check specs about
// the sandboxes it would run.
func ValidateSpecs(d Desired, unavailable map[string]error, get func(string) (Driver, error)) map[string]error {
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
