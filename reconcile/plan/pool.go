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
//
// A pool with memory_template also keeps one memory template: a spare made
// the same way, its memory then saved and the VM stopped (drivers.Templater)
// before it is labelled. Nobody adopts it; a create of its shape that finds
// no ready spare starts its own VM from the saved memory, and the template
// stays. It is replaced as spares are: past max_idle, on a shape change.

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
	// Memory asks for a memory template of the shape besides the spares.
	Memory bool
}

// SparePlan is how a pool's new spare is made.
type SparePlan struct {
	Pool      string        `json:"pool"`
	Workspace string        `json:"workspace_id"`
	Shape     string        `json:"shape"`
	MaxIdle   time.Duration `json:"max_idle"`
	Runtime   bool          `json:"runtime,omitempty"`
	Install   bool          `json:"install,omitempty"`
	// Memory makes the spare a memory template: saved and stopped once
	// ready (drivers.Templater).
	Memory bool `json:"memory,omitempty"`
}

func desiredPools(r *spec.Resolved) map[string]DesiredPool {
	out := map[string]DesiredPool{}
	for name, p := range r.Config.Pools {
		driver := r.Host.ResolveDriver(p.Driver)
		sb := spec.Sandbox{Network: r.Config.Network} // a spare has no mounts or ports
		byname.Copy(&sb.VM, p)
		vm := vmSpec("", sb, r.Root, r.Host)
		out[name] = DesiredPool{Name: name, Driver: driver, Shape: drivers.Shape(driver, vm), VM: vm, Size: p.Size,
			MaxIdle: p.MaxIdle.Std(), Runtime: p.Runtime, Install: r.Config.Docker.InstallIfMissing, Memory: p.MemoryTemplate}
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
	return !s.InFlight && l != nil && l.Spare != nil && !l.Spare.Memory && l.Owner == nil &&
		s.Status == drivers.Running && now.Before(l.Spare.IdleUntil)
}

// template reports whether creates may start from it now: a memory
// template, saved and stopped, nobody retired.
func (s Spare) template(now time.Time) bool {
	l := s.Label
	return !s.InFlight && l != nil && l.Spare != nil && l.Spare.Memory && l.Owner == nil &&
		s.Status == drivers.Stopped && now.Before(l.Spare.IdleUntil)
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
	byShape   map[string][]Spare // driver + shape → ready spares, by name
	theirs    map[string][]Spare // the same, of teammates (Observed.Teammates): tried after
	templates map[string]string  // driver + shape → a memory template
	taken     map[string]int
	targets   []string
}

func newWarmSpares(obs Observed, now time.Time, gc []Action, targets []string) *warmSpares {
	deleting := map[string]bool{}
	for _, a := range gc {
		deleting[a.Instance] = true
	}
	w := &warmSpares{byShape: map[string][]Spare{}, theirs: map[string][]Spare{}, templates: map[string]string{},
		taken: map[string]int{}, targets: targets}
	for _, s := range obs.Spares {
		if key := s.Driver + "/" + s.Shape(); s.template(now) && !deleting[s.Name] &&
			(w.templates[key] == "" || s.Name < w.templates[key]) {
			w.templates[key] = s.Name
		}
		if s.ready(now) && !deleting[s.Name] {
			key := s.Driver + "/" + s.Label.Spare.Shape
			w.byShape[key] = append(w.byShape[key], s)
		}
	}
	for _, s := range obs.Teammates { // sorted by name
		if s.ready(now) {
			key := s.Driver + "/" + s.Label.Spare.Shape
			w.theirs[key] = append(w.theirs[key], s)
		}
	}
	for _, list := range w.byShape {
		sort.Slice(list, func(i, j int) bool { return list[i].Name < list[j].Name })
	}
	return w
}

// targeted reports whether the plan may give the sandbox a spare.
func (w *warmSpares) targeted(ds DesiredSandbox) bool {
	return w != nil && Targeted(w.targets, ds.Name)
}

// template is the memory template a sandbox's create starts from ("" for
// none). A template has no mounts and its devices are fixed by its saved
// state, so a sandbox with mounts boots (or adopts) instead.
func (w *warmSpares) template(ds DesiredSandbox) string {
	if !w.targeted(ds) || len(ds.VM.Mounts) > 0 {
		return ""
	}
	return w.templates[ds.Driver+"/"+drivers.Shape(ds.Driver, ds.VM)]
}

// take returns the spares the sandbox tries, in order (none: create).
func (w *warmSpares) take(ds DesiredSandbox) []Spare {
	if !w.targeted(ds) {
		return nil
	}
	key := ds.Driver + "/" + drivers.Shape(ds.Driver, ds.VM)
	own, theirs := w.byShape[key], w.theirs[key]
	k := w.taken[key]
	if k >= len(own)+len(theirs) {
		return nil
	}
	w.taken[key] = k + 1
	if k < len(own) {
		return append(rotated(own, k), theirs...)
	}
	return append(rotated(theirs, k-len(own)), own...) // the own ones are the earlier sandboxes' first choices
}

// rotated is list starting at its k-th (k < len(list)), in a slice of its own.
func rotated(list []Spare, k int) []Spare {
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
		if a.Template = p.warm.template(ds); a.Template != "" {
			a.Cause += "; from memory template " + a.Template
		}
		return
	}
	a.Kind, a.Instance = Adopt, spares[0].Name
	a.Docker = spares[0].Label.Spare.Docker
	for _, s := range spares {
		a.Warm = append(a.Warm, s.Name)
		if s.HeldByAnother {
			a.Theirs = append(a.Theirs, s.Name)
		}
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
	templates := map[string][]Spare{}
	for _, s := range obs.Spares {
		l := s.Label
		var cause string
		memory := l != nil && l.Spare != nil && l.Spare.Memory
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
		case memory && s.Status != drivers.Stopped:
			cause = "memory template is " + string(s.Status) + " (templates are kept stopped)"
		case !memory && s.Status != drivers.Running:
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
			case memory && !p.Memory:
				cause = "pool " + l.Spare.Pool + " keeps no memory template"
			case memory:
				templates[p.Name] = append(templates[p.Name], s)
			default:
				kept[p.Name] = append(kept[p.Name], s)
			}
		}
		if cause != "" {
			out = append(out, SpareDelete(s, cause))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(kept)) {
		out = append(out, trimSpares(kept[name], d.Pools[name].Size, fmt.Sprintf("pool %s keeps %d", name,
			d.Pools[name].Size))...)
	}
	for _, name := range slices.Sorted(maps.Keys(templates)) {
		out = append(out, trimSpares(templates[name], 1, "pool "+name+" keeps one memory template")...)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Instance < out[j].Instance })
	return out
}

// trimSpares deletes all but the youngest size of list: they idle out last.
func trimSpares(list []Spare, size int, cause string) []Action {
	if len(list) <= size {
		return nil
	}
	sort.Slice(list, func(i, j int) bool { return list[i].Label.Spare.CreatedAt.After(list[j].Label.Spare.CreatedAt) })
	var out []Action
	for _, s := range list[size:] {
		out = append(out, SpareDelete(s, cause))
	}
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
// plus the spares (and memory template) each pool lacks. Pools of one
// driver and shape share their spares (the largest size wins) and one
// template. A pool whose driver cannot be listed, keeps no labels, or
// keeps no templates it asks for, is a problem.
func ComputePools(d Desired, obs Observed, now time.Time) *Plan {
	p := &Plan{Actions: planSpareGC(d, obs, now)}
	deleting := map[string]bool{}
	for _, a := range p.Actions {
		deleting[a.Instance] = true
	}
	have := map[string]int{} // driver/shape → spares that count
	haveTemplate := map[string]bool{}
	for _, s := range obs.Spares {
		if s.InFlight || s.ready(now) && !deleting[s.Name] {
			have[s.Driver+"/"+s.Shape()]++
		}
		if s.template(now) && !deleting[s.Name] {
			haveTemplate[s.Driver+"/"+s.Shape()] = true
		}
	}
	taken := map[string]bool{}
	for name := range obs.PoolNames {
		taken[name] = true
	}
	groups, problems := poolGroups(d, obs)
	p.Problems = append(p.Problems, problems...)
	for _, key := range slices.Sorted(maps.Keys(groups)) {
		pl := groups[key]
		n := 0
		next := func() string {
			for {
				n++
				if name := drivers.PoolInstanceName(pl.Shape, n); !taken[name] {
					taken[name] = true
					return name
				}
			}
		}
		for i := have[key]; i < pl.Size; i++ {
			name := next()
			p.Actions = append(p.Actions, newSpare(d, pl, name, fmt.Sprintf("spare %d of %d: %s", i+1, pl.Size, name)))
		}
		if pl.Memory && !haveTemplate[key] {
			name := next()
			a := newSpare(d, pl, name, "memory template: "+name+" (booted once, its memory saved, then stopped)")
			a.Spare.Memory = true
			p.Actions = append(p.Actions, a)
		}
	}
	return p
}

// poolGroups gathers the pools by driver and shape, which share their
// spares (the largest size wins) and one memory template; a pool whose
// driver cannot be listed, keeps no labels, or keeps no templates it asks
// for, is a problem.
func poolGroups(d Desired, obs Observed) (groups map[string]DesiredPool, problems []Problem) {
	groups = map[string]DesiredPool{}
	for _, name := range slices.Sorted(maps.Keys(d.Pools)) {
		pl := d.Pools[name]
		subject := "pool." + name
		if err := obs.Unavailable[pl.Driver]; err != nil {
			problems = append(problems, Problem{Sandbox: subject, Err: err, Message: err.Error()})
			continue
		}
		if !obs.Labels[pl.Driver] {
			err := fmt.Errorf("the %s driver keeps no ownership labels, so it cannot keep spares", pl.Driver)
			problems = append(problems, Problem{Sandbox: subject, Err: err, Message: err.Error()})
			continue
		}
		key := pl.Driver + "/" + pl.Shape
		g, ok := groups[key]
		memory := pl.Memory || g.Memory // one template serves the shape
		if !ok || pl.Size > g.Size {
			g = pl
		}
		g.Memory = memory
		groups[key] = g
	}
	for _, key := range slices.Sorted(maps.Keys(groups)) {
		if pl := groups[key]; pl.Memory && !obs.Templates[pl.Driver] {
			err := fmt.Errorf("the %s driver cannot keep memory templates (it cannot fork from saved memory): "+
				"set memory_template = false, or keep running spares (size)", pl.Driver)
			problems = append(problems, Problem{Sandbox: "pool." + pl.Name, Err: err, Message: err.Error()})
			pl.Memory = false
			groups[key] = pl
		}
	}
	return groups, problems
}

// newSpare is the action making pool pl's spare name.
func newSpare(d Desired, pl DesiredPool, name, cause string) Action {
	vm := pl.VM
	vm.Name = name
	return Action{Kind: Create, Pool: pl.Name, Instance: name, Driver: pl.Driver, Spec: &vm, Cause: cause,
		Spare: &SparePlan{Pool: pl.Name, Workspace: d.WorkspaceID, Shape: pl.Shape, MaxIdle: pl.MaxIdle,
			Runtime: pl.Runtime, Install: pl.Install}}
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
