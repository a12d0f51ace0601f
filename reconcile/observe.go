package reconcile

import (
	"context"
	"sort"

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
	// Owned maps sandboxes to the instances labelled as theirs (adopted
	// spares, imports); such instances are in Instances too.
	Owned map[string]string
	// Spares are the pool instances nobody owns, of every workspace,
	// sorted by name; PoolNames every pool instance name listed, owned or
	// not (a new spare must not take one).
	Spares    []Spare
	PoolNames map[string]bool
	// Labels says which drivers keep ownership labels (drivers.Labeler):
	// only they keep spares.
	Labels map[string]bool
}

// Lister is the part of a driver observation needs.
type Lister interface {
	List(ctx context.Context) ([]drivers.Instance, error)
}

// Observe lists each driver once and keeps the instances that belong to
// this workspace: those whose derived name says so and those labelled as
// one of its sandboxes'. Pool instances nobody owns are kept as spares.
// Everything else is never looked at again.
func Observe(ctx context.Context, workspaceID string, driverNames []string, get func(string) (Lister, error)) Observed {
	obs := Observed{Instances: map[string]drivers.Instance{}, Unavailable: map[string]error{}, Owned: map[string]string{},
		PoolNames: map[string]bool{}, Labels: map[string]bool{}}
	tag := drivers.WorkspaceTag(workspaceID)
	listed := map[string]bool{}
	for _, name := range driverNames {
		if listed[name] {
			continue
		}
		listed[name] = true
		l, err := get(name)
		if err == nil {
			_, obs.Labels[name] = l.(drivers.Labeler)
			var list []drivers.Instance
			if list, err = l.List(ctx); err == nil {
				for _, inst := range list {
					inst.Driver = name
					obs.add(inst, workspaceID, tag)
				}
				continue
			}
		}
		obs.Unavailable[name] = err
	}
	sort.Slice(obs.Spares, func(i, j int) bool { return obs.Spares[i].Name < obs.Spares[j].Name })
	return obs
}

func (obs *Observed) add(inst drivers.Instance, workspaceID, tag string) {
	_, _, pool := drivers.ParsePoolName(inst.Name)
	if pool {
		obs.PoolNames[inst.Name] = true
	}
	if l := inst.Label; l != nil && l.Owner != nil && !l.Owner.Retired {
		if l.Owner.WorkspaceID == workspaceID {
			obs.Instances[inst.Name] = inst
			// Two instances claiming one sandbox cannot come from sbf;
			// the first by name is taken, deterministically.
			if cur, ok := obs.Owned[l.Owner.Sandbox]; !ok || inst.Name < cur {
				obs.Owned[l.Owner.Sandbox] = inst.Name
			}
		}
		return
	}
	if pool {
		obs.Spares = append(obs.Spares, Spare{Instance: inst})
		return
	}
	if t, _, ok := drivers.ParseInstanceName(inst.Name); ok && t == tag {
		obs.Instances[inst.Name] = inst
	}
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
