package plan

import (
	"maps"
	"slices"
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
	// Teammates are the ready spares other people made on a backend a team
	// shares, sorted by name: offered to this workspace's creates (a claim
	// makes one this user's), never trimmed, collected or evicted here, nor
	// counted against this host's cap until claimed.
	Teammates []Spare
	// Holdings are the instances a shared backend listed with the person holding each
	// (drivers.Instance.Holder), whoever's, by driver and name: who holds what until when.
	Holdings []drivers.Instance
	// Labels says which drivers keep ownership labels (drivers.Labeler):
	// only they keep spares.
	Labels map[string]bool
	// Templates says which drivers keep memory templates (drivers.Templater).
	Templates map[string]bool
	// Departed says, by sandbox, why an instance the record says was made
	// went without sbf, as its backend saw it (drivers.DepartureReporter).
	Departed map[string]drivers.Departure
}

// NewObserved keeps, of what each driver listed, the instances that belong
// to this workspace: those whose derived name says so and those labelled
// as one of its sandboxes'. Pool instances nobody owns are kept as spares.
// Everything else is kept only as a holding (a shared backend's, naming its
// holder), never planned for. failed says why a driver could
// not be listed; labels which drivers keep ownership labels.
func NewObserved(workspaceID string, listed map[string][]drivers.Instance, failed map[string]error,
	labels map[string]bool) Observed {
	n := 0
	for _, insts := range listed {
		n += len(insts)
	}
	obs := Observed{Instances: make(map[string]drivers.Instance, n), Unavailable: map[string]error{},
		Owned: map[string]string{}, PoolNames: map[string]bool{}, Labels: map[string]bool{}}
	tag := drivers.WorkspaceTag(workspaceID)
	for _, name := range slices.Sorted(maps.Keys(listed)) {
		obs.Labels[name] = labels[name]
		for _, inst := range listed[name] {
			inst.Driver = name
			if inst.Holder != "" {
				obs.Holdings = append(obs.Holdings, inst)
			}
			obs.add(inst, workspaceID, tag)
		}
	}
	maps.Copy(obs.Unavailable, failed)
	obs.sortSpares()
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
	switch {
	case pool && !inst.HeldByAnother:
		obs.Spares = append(obs.Spares, Spare{Instance: inst})
		return
	case pool:
		// A teammate's spare is theirs to fill, trim and collect; a ready one may be
		// claimed here.
		if l := inst.Label; l != nil && l.Spare != nil && !l.Spare.Memory {
			obs.Teammates = append(obs.Teammates, Spare{Instance: inst})
		}
		return
	}
	if t, _, ok := drivers.ParseInstanceName(inst.Name); ok && t == tag {
		obs.Instances[inst.Name] = inst
	}
}

// Refresh replaces what was observed of a driver's named instances with
// what it reports of them now (found: a name it no longer reports is
// gone), leaving every other instance as it was observed.
func (obs *Observed) Refresh(workspaceID, driver string, names []string, found []drivers.Instance) {
	gone := map[string]bool{}
	for _, n := range names {
		gone[n] = true
		delete(obs.Instances, n)
	}
	maps.DeleteFunc(obs.Owned, func(_, instance string) bool { return gone[instance] })
	obs.Spares = slices.DeleteFunc(obs.Spares, func(s Spare) bool { return gone[s.Name] })
	obs.Teammates = slices.DeleteFunc(obs.Teammates, func(s Spare) bool { return gone[s.Name] })
	tag := drivers.WorkspaceTag(workspaceID)
	for _, inst := range found {
		inst.Driver = driver
		obs.add(inst, workspaceID, tag)
	}
	obs.sortSpares()
}

func (obs *Observed) sortSpares() {
	for _, list := range [][]Spare{obs.Spares, obs.Teammates} {
		sort.Slice(list, func(i, j int) bool { return list[i].Name < list[j].Name })
	}
}
