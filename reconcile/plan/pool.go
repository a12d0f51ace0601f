package plan

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"time"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/internal/byname"
	"github.com/sandboxforge/sbf/spec"
	"github.com/sandboxforge/sbf/state"
)

// A warm pool is desired state: [pool.NAME] asks for Size booted, idle
// VMs of one shape (spares). A sandbox whose VM would be created adopts a
// ready spare of its shape instead; the pool is refilled by a later pool
// pass (the loop, `sbf pool fill`), never by the create itself.
//
// Spares are host-wide: any workspace's sandbox adopts any spare of its
// driver and shape. A spare's label names the pool and workspace that made
// it and when it idles out; its owner label, once adopted, names the
// sandbox. The steps are ordered so a crash at any point leaves either a
// spare or an owned instance:
//
//	fill:   reserve the name (a held file lock: "in flight"), create, start,
//	        [runtime], label as spare — an unlabelled spare whose
//	        reservation is free was left by a crash and is deleted
//	adopt:  claim the spare (owner label, atomic, under the host pool lock),
//	        then record it in the state file — an owned instance missing
//	        from the state is found by its label
//	delete: claim it as retired (so no adopter takes it), then delete

// DesiredPool is one [pool.NAME] table, resolved.
type DesiredPool struct {
	Name    string
	Driver  string // resolved: never "auto"
	Shape   string // drivers.Shape of Driver and VM
	VM      drivers.Spec
	Size    int
	MaxIdle time.Duration
	// Runtime asks for the container runtime to be made ready in each
	// spare (Install: installed when missing).
	Runtime bool
	Install bool
}

// SparePlan is how a pool's new spare is made.
type SparePlan struct {
	Pool      string        `json:"pool"`
	Workspace string        `json:"workspace_id"`
	Shape     string        `json:"shape"`
	MaxIdle   time.Duration `json:"max_idle"`
	Runtime   bool          `json:"runtime,omitempty"`
	Install   bool          `json:"install,omitempty"`
}

func desiredPools(r *spec.Resolved) map[string]DesiredPool {
	out := map[string]DesiredPool{}
	for name, p := range r.Config.Pools {
		driver := r.Host.ResolveDriver(p.Driver)
		sb := spec.Sandbox{Network: r.Config.Network} // a spare has no mounts or ports
		byname.Copy(&sb.VM, p)
		vm := vmSpec("", sb, r.Root, r.Host)
		out[name] = DesiredPool{Name: name, Driver: driver, Shape: drivers.Shape(driver, vm), VM: vm, Size: p.Size,
			MaxIdle: p.MaxIdle.Std(), Runtime: p.Runtime, Install: r.Config.Docker.InstallIfMissing}
	}
	return out
}

// Spare is a pool instance nobody owns: a ready spare, one a fill is
// still making, one a crash left unlabelled, or one retired for deletion.
type Spare struct {
	drivers.Instance
	// InFlight says a fill is still making it (its reservation is held).
	InFlight bool `json:"in_flight,omitempty"`
}

// Shape is the shape its name carries.
func (s Spare) Shape() string {
	Shape, _, _ := drivers.ParsePoolName(s.Name)
	return Shape
}

// ready reports whether a sandbox may adopt it now.
func (s Spare) ready(now time.Time) bool {
	l := s.Label
	return !s.InFlight && l != nil && l.Spare != nil && l.Owner == nil && s.Status == drivers.Running &&
		now.Before(l.Spare.IdleUntil)
}

// InstanceFor is the instance a sandbox's VM is: the one its record names
// while that exists (or, once the sandbox ended, the one it had), else the
// one labelled as its own (adopted, then a crash before the record), else
// the derived name a create makes.
func InstanceFor(workspaceID, sandbox string, r *state.Sandbox, obs Observed) string {
	if r != nil && r.Instance != "" {
		if _, ok := obs.Instances[r.Instance]; ok || r.Phase.Terminal() {
			return r.Instance
		}
	}
	if inst, ok := obs.Owned[sandbox]; ok {
		return inst
	}
	return drivers.InstanceName(workspaceID, sandbox)
}

// warmSpares hands ready spares to the sandboxes a plan creates: the k-th
// sandbox of a shape gets the spares of that shape starting at the k-th,
// so sandboxes of one plan try different spares first, and each tries
// them all before creating. Sandboxes beyond the spares create.
type warmSpares struct {
	byShape map[string][]Spare // driver + shape → ready spares, by name
	taken   map[string]int
	targets []string
}

func newWarmSpares(obs Observed, now time.Time, gc []Action, targets []string) *warmSpares {
	deleting := map[string]bool{}
	for _, a := range gc {
		deleting[a.Instance] = true
	}
	w := &warmSpares{byShape: map[string][]Spare{}, taken: map[string]int{}, targets: targets}
	for _, s := range obs.Spares {
		if s.ready(now) && !deleting[s.Name] {
			key := s.Driver + "/" + s.Label.Spare.Shape
			w.byShape[key] = append(w.byShape[key], s)
		}
	}
	for _, list := range w.byShape {
		sort.Slice(list, func(i, j int) bool { return list[i].Name < list[j].Name })
	}
	return w
}

// take returns the spares the sandbox tries, in order (none: create).
func (w *warmSpares) take(ds DesiredSandbox) []Spare {
	if w == nil || len(w.targets) > 0 && !slices.Contains(w.targets, ds.Name) {
		return nil
	}
	key := ds.Driver + "/" + drivers.Shape(ds.Driver, ds.VM)
	list := w.byShape[key]
	k := w.taken[key]
	if k >= len(list) {
		return nil
	}
	w.taken[key] = k + 1
	return append(slices.Clone(list[k:]), list[:k]...)
}

// planAdopt turns a create into an adopt when a ready spare of the
// sandbox's shape exists, or when the sandbox imports a named instance.
func planAdopt(p *Plan, a *Action, ds DesiredSandbox, r *state.Sandbox) {
	if ds.Adopt != "" && (r == nil || r.Instance == "" || r.Instance == ds.Adopt && !r.Phase.Terminal()) {
		a.Kind, a.Import, a.Warm, a.Instance = Adopt, true, []string{ds.Adopt}, ds.Adopt
		a.Cause = "import existing instance " + ds.Adopt
		return
	}
	spares := p.warm.take(ds)
	if len(spares) == 0 {
		return
	}
	a.Kind, a.Instance = Adopt, spares[0].Name
	a.Docker = spares[0].Label.Spare.Docker
	for _, s := range spares {
		a.Warm = append(a.Warm, s.Name)
		if s.Label.Spare.Docker == "" {
			a.Docker = "" // the runtime step stays unless every spare has it
		}
	}
	a.WasRunning = true
	// Spares have no mounts or ports: an adopter that wants them restarts
	// the spare with them.
	var then []string
	if len(ds.VM.Mounts) > 0 {
		then = append(then, "mounts "+list(ds.VM.Mounts))
	}
	if len(ds.VM.Ports) > 0 {
		then = append(then, "ports "+list(ds.VM.Ports))
	}
	if len(then) > 0 {
		a.Reconfigure = true
		a.Cause += "; then " + joinCauses(then) + " (restart)"
	}
}

// planSpareGC deletes the spares nobody should keep: retired ones, those
// a crashed fill left unlabelled, broken or stopped ones, those idle past
// their max_idle (any workspace's), and those whose pool this workspace
// no longer declares or declares with another shape or a smaller size.
func planSpareGC(d Desired, obs Observed, now time.Time) []Action {
	var out []Action
	kept := map[string][]Spare{} // this workspace's pool → its ready spares
	for _, s := range obs.Spares {
		l := s.Label
		var cause string
		switch {
		case l != nil && l.Owner != nil && l.Owner.Retired:
			cause = "retired: being deleted"
		case l == nil || l.Spare == nil:
			if !s.InFlight {
				cause = "left unfinished by an interrupted fill"
			}
		case s.InFlight:
		case s.Status == drivers.Broken:
			cause = "broken"
		case s.Status != drivers.Running:
			cause = string(s.Status) + " (spares are kept running)"
		case !now.Before(l.Spare.IdleUntil):
			cause = fmt.Sprintf("idle since %s, longer than its max_idle (%s)", l.Spare.CreatedAt.UTC().Format(time.RFC3339),
				spec.Duration(l.Spare.IdleUntil.Sub(l.Spare.CreatedAt)))
		case l.Spare.Workspace == d.WorkspaceID:
			p, ok := d.Pools[l.Spare.Pool]
			switch {
			case !ok:
				cause = "pool " + l.Spare.Pool + " is not in configuration"
			case p.Shape != s.Shape() || p.Driver != s.Driver:
				cause = "pool " + l.Spare.Pool + "'s shape changed"
			default:
				kept[p.Name] = append(kept[p.Name], s)
			}
		}
		if cause != "" {
			out = append(out, SpareDelete(s, cause))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(kept)) {
		list, size := kept[name], d.Pools[name].Size
		if len(list) <= size {
			continue
		}
		// Keep the youngest: they idle out last.
		sort.Slice(list, func(i, j int) bool { return list[i].Label.Spare.CreatedAt.After(list[j].Label.Spare.CreatedAt) })
		for _, s := range list[size:] {
			out = append(out, SpareDelete(s, fmt.Sprintf("pool %s keeps %d", name, size)))
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Instance < out[j].Instance })
	return out
}

func SpareDelete(s Spare, cause string) Action {
	pool := ""
	if s.Label != nil && s.Label.Spare != nil {
		pool = s.Label.Spare.Pool
	}
	return Action{Kind: Delete, Pool: pool, Instance: s.Name, Driver: s.Driver, Cause: s.Name + ": " + cause}
}

// ComputePools is the pool planner: the spare deletions every plan makes,
// plus the spares each pool lacks. Pools of one driver and shape share
// their spares: the largest size wins. A pool whose driver cannot be
// listed, or keeps no labels, is a problem.
func ComputePools(d Desired, obs Observed, now time.Time) *Plan {
	p := &Plan{Actions: planSpareGC(d, obs, now)}
	deleting := map[string]bool{}
	for _, a := range p.Actions {
		deleting[a.Instance] = true
	}
	have := map[string]int{} // driver/shape → spares that count
	for _, s := range obs.Spares {
		if s.InFlight || s.ready(now) && !deleting[s.Name] {
			have[s.Driver+"/"+s.Shape()]++
		}
	}
	taken := map[string]bool{}
	for name := range obs.PoolNames {
		taken[name] = true
	}
	groups := map[string]DesiredPool{}
	for _, name := range slices.Sorted(maps.Keys(d.Pools)) {
		pl := d.Pools[name]
		subject := "pool." + name
		if err := obs.Unavailable[pl.Driver]; err != nil {
			p.Problems = append(p.Problems, Problem{Sandbox: subject, Err: err, Message: err.Error()})
			continue
		}
		if !obs.Labels[pl.Driver] {
			err := fmt.Errorf("the %s driver keeps no ownership labels, so it cannot keep spares", pl.Driver)
			p.Problems = append(p.Problems, Problem{Sandbox: subject, Err: err, Message: err.Error()})
			continue
		}
		key := pl.Driver + "/" + pl.Shape
		if g, ok := groups[key]; !ok || pl.Size > g.Size {
			groups[key] = pl
		}
	}
	for _, key := range slices.Sorted(maps.Keys(groups)) {
		pl := groups[key]
		n := 0
		for i := have[key]; i < pl.Size; i++ {
			var name string
			for {
				n++
				if name = drivers.PoolInstanceName(pl.Shape, n); !taken[name] {
					break
				}
			}
			taken[name] = true
			vm := pl.VM
			vm.Name = name
			p.Actions = append(p.Actions, Action{Kind: Create, Pool: pl.Name, Instance: name, Driver: pl.Driver, Spec: &vm,
				Cause: fmt.Sprintf("spare %d of %d: %s", i+1, pl.Size, name),
				Spare: &SparePlan{Pool: pl.Name, Workspace: d.WorkspaceID, Shape: pl.Shape, MaxIdle: pl.MaxIdle,
					Runtime: pl.Runtime, Install: pl.Install}})
		}
	}
	return p
}

// Subject names what an action is about in output: its sandbox, or the
// pool of a spare.
func (a Action) Subject() string {
	switch {
	case a.Sandbox != "":
		return a.Sandbox
	case a.Pool != "":
		return "pool." + a.Pool
	}
	return "pool"
}
