package plan

import (
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/spec"
	"github.com/sandboxforge/sbf/state"
)

// Kind is what an action does.
type Kind string

const (
	Create  Kind = "create"
	Start   Kind = "start"
	Update  Kind = "update"  // restart-class change: stop, reconfigure, start
	Replace Kind = "replace" // delete, then create
	Delete  Kind = "delete"
	Expire  Kind = "expire" // delete because the lease ran out
	// Adopt takes a ready spare of a pool (or, for an import, a named
	// existing instance) as the sandbox's VM instead of creating one.
	Adopt Kind = "adopt"
)

// Action is one step of a plan, with the reason it is needed.
type Action struct {
	Sandbox  string        `json:"sandbox"`
	Kind     Kind          `json:"action"`
	Cause    string        `json:"cause"`
	Instance string        `json:"instance"`
	Driver   string        `json:"driver"`
	Drift    bool          `json:"drift,omitempty"`
	Spec     *drivers.Spec `json:"spec,omitempty"`
	// OldDriver is where the instance a replace deletes lives.
	OldDriver string `json:"old_driver,omitempty"`
	// WasRunning tells an update to stop the instance first.
	WasRunning bool `json:"was_running,omitempty"`
	// Force has a delete, an expiry or a replace remove the instance
	// without a clean stop: halted at once, then deleted.
	Force     bool       `json:"force,omitempty"`
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
	// Docker is the guest's docker command when the plan saw it ready
	// (for an adopt: the runtime the spares' pool made ready).
	Docker string `json:"docker,omitempty"`
	// Warm lists, for an adopt, the spares to claim, first first; when
	// another sbf claimed them all meanwhile, the adopt creates the VM as
	// Spec says instead. Instance is the first.
	Warm []string `json:"warm,omitempty"`
	// Theirs are the spares of Warm a teammate made (a backend a team
	// shares): claiming one makes it this user's, a new instance against
	// this host's cap.
	Theirs []string `json:"theirs,omitempty"`
	// Import makes an adopt claim the one instance in Warm, made outside
	// sbf's pools, and fail rather than create when it cannot.
	Import bool `json:"import,omitempty"`
	// Reconfigure makes an adopt apply the restart-class keys the spare
	// lacks (mounts, ports): stop, reconfigure, start.
	Reconfigure bool `json:"reconfigure,omitempty"`
	// Source, for a create, is what the VM's disk is copied from (a
	// clone, or from_snapshot) instead of made from its image.
	Source *Source `json:"source,omitempty"`
	// Pool names the pool of a spare this action makes or deletes (no
	// sandbox's); Spare says how a new spare is made.
	Pool  string     `json:"pool,omitempty"`
	Spare *SparePlan `json:"spare,omitempty"`
	// Template, for a create, is the memory template (a pool's saved
	// spare) the VM starts from instead of booting; when it cannot, the
	// create boots the VM as Spec says.
	Template string `json:"memory_template,omitempty"`
	// Bootstrap marks a step every new ad-hoc sandbox takes (its runtime,
	// services and connection env on a new VM): part of its create, as it
	// is of `sbf up --new` and create_instance, so neither shown on a line
	// of its own nor counted (issue 40: an ad-hoc plan shows what differs
	// from the defaults, as a declared one does).
	Bootstrap bool `json:"bootstrap,omitempty"`
}

// Refresh corrects the record of a sandbox whose instance already is as
// desired (adopted after a lost state file, a failure that healed, a VM
// already gone). It changes the state file, never the world.
type Refresh struct {
	Sandbox  string        `json:"sandbox"`
	Phase    state.Phase   `json:"phase"`
	Instance string        `json:"instance"`
	Driver   string        `json:"driver"`
	VM       *drivers.Spec `json:"vm,omitempty"`
	// Docker records the guest's docker command, found ready without sbf
	// installing anything (an image with Docker built in).
	Docker string `json:"docker,omitempty"`
	Note   string `json:"note"`
}

// Problem is a sandbox the planner could not decide about.
type Problem struct {
	Sandbox string `json:"sandbox"`
	Err     error  `json:"-"`
	Message string `json:"message"`
}

// Plan is the difference between desired and actual, as steps.
type Plan struct {
	Actions  []Action  `json:"actions"`
	Refresh  []Refresh `json:"refresh"`
	Problems []Problem `json:"problems"`
	// Leases are the lease ends to record: renewals, acquisitions and
	// extensions of sandboxes that keep a live lease.
	Leases []LeaseRenewal `json:"leases,omitempty"`

	warm *warmSpares // while planning: the spares sandboxes may adopt
}

// Empty reports whether applying the plan would change no VM and correct
// no record. Lease renewals do not count: every apply renews what it
// keeps, so a converged workspace would never be empty otherwise.
func (p *Plan) Empty() bool { return len(p.Actions) == 0 && len(p.Refresh) == 0 }

// Compute is the planner: a pure function of what is desired, what was
// recorded, what is observed and the time. It does no I/O and reads no
// clock; its output is sorted by sandbox, so it renders the same every time.
func Compute(d Desired, rec *state.File, obs Observed, now time.Time) *Plan {
	return ComputeFor(d, rec, obs, now, nil)
}

// ComputeFor is Compute for a run limited to targets (all sandboxes when
// empty): spares are handed out to the sandboxes the run will create. Its
// caller keeps only the targets' actions (Plan.Only).
func ComputeFor(d Desired, rec *state.File, obs Observed, now time.Time, targets []string) *Plan {
	p := &Plan{}
	gc := planSpareGC(d, obs, now)
	p.warm = newWarmSpares(obs, now, gc, targets)
	d = resolveSources(d, rec, obs)
	for _, name := range sandboxNames(d, rec, obs) {
		planSandbox(p, d, rec.Sandboxes[name], obs, name, now)
	}
	p.Actions = append(p.Actions, gc...)
	p.warm = nil
	return p
}

// Found are the sandboxes only the backends name: instances named or
// labelled for a sandbox that neither the desired state nor the state file
// has (a run that read them before another made it, or an orphan).
func Found(d Desired, rec *state.File, obs Observed) []string {
	var out []string
	for _, name := range sandboxNames(d, rec, obs) {
		if _, ok := d.Sandboxes[name]; !ok && rec.Sandboxes[name] == nil {
			out = append(out, name)
		}
	}
	return out
}

func sandboxNames(d Desired, rec *state.File, obs Observed) []string {
	seen := make(map[string]bool, max(len(d.Sandboxes), len(rec.Sandboxes)))
	for name := range d.Sandboxes {
		seen[name] = true
	}
	for name := range rec.Sandboxes {
		seen[name] = true
	}
	for inst := range obs.Instances {
		if _, name, ok := drivers.ParseInstanceName(inst); ok {
			seen[name] = true
		}
	}
	for name := range obs.Owned {
		seen[name] = true
	}
	names := make([]string, 0, len(seen))
	for n := range seen {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func planSandbox(p *Plan, d Desired, r *state.Sandbox, obs Observed, name string, now time.Time) {
	ds, declared := d.Sandboxes[name]
	instance := InstanceFor(d.WorkspaceID, name, r, obs)
	ds.VM.Name = instance // ds.Instance stays the derived name: what a create makes
	inst, exists := obs.Instances[instance]
	driver := ds.Driver
	if !declared {
		driver = inst.Driver
		if r != nil {
			driver = r.Driver
		}
	}
	live := declared && ds.Lease != nil && now.Before(ds.Lease.ExpiresAt) && !leaseEnded(r, ds.Lease)
	if live {
		// Recorded even when the sandbox cannot be planned: the lease is
		// held all the same.
		planLease(p, name, ds.Lease, r, now)
	}
	for _, drv := range relevantDrivers(driver, r, inst, exists) {
		if err := obs.Unavailable[drv]; err != nil {
			p.Problems = append(p.Problems, Problem{Sandbox: name, Err: err, Message: err.Error()})
			return
		}
	}
	base := Action{Sandbox: name, Instance: instance, Driver: driver}
	switch {
	case live:
		planWanted(p, base, ds, r, inst, exists, obs)
	case declared && ds.Lease != nil:
		expiry := ds.Lease.ExpiresAt.UTC()
		cause := "lease expired at " + expiry.Format(time.RFC3339)
		if exists {
			// A VM whose lease ended is owed no clean shutdown (see forceCause).
			base.Kind, base.Cause, base.ExpiresAt, base.Force = Expire, cause, &expiry, true
			p.Actions = append(p.Actions, base)
		} else if r != nil && r.Phase != state.Expired {
			gone := "the instance is already gone"
			if dep, ok := obs.Departed[name]; ok {
				gone = "the instance was " + dep.String()
			}
			p.Refresh = append(p.Refresh, Refresh{Sandbox: name, Phase: state.Expired, Instance: instance, Driver: driver,
				Note: cause + "; " + gone})
		} else {
			planForget(p, d, r, name, now)
		}
	default:
		cause := "not in configuration"
		if declared {
			cause = "no lease (destroyed)"
		}
		if exists {
			base.Kind, base.Cause = Delete, cause
			base.Force, base.Cause = forceCause(d.Force, inst, cause)
			p.Actions = append(p.Actions, base)
		} else if r != nil && !r.Phase.Terminal() {
			p.Refresh = append(p.Refresh, Refresh{Sandbox: name, Phase: state.Destroyed, Instance: instance, Driver: driver,
				Note: cause + "; the instance is already gone"})
		} else {
			planForget(p, d, r, name, now)
		}
	}
}

// forceCause decides whether removing inst skips its clean stop, and says
// so in the cause: the run asked it (destroy --force), or the VM is still
// booting (its guest cannot shut down cleanly before its boot is over, so
// a clean stop waits minutes for a boot whose VM is deleted next).
func forceCause(asked bool, inst drivers.Instance, cause string) (bool, string) {
	switch {
	case inst.Status == drivers.Booting:
		return true, cause + "; still booting: deleted without waiting for its boot"
	case asked:
		return true, cause + "; forced: deleted without a clean stop"
	}
	return false, cause
}

// leaseEnded says the sandbox was expired at this very lease's end: a
// clock that reads earlier now (stepped back, or SBF_NOW) does not bring
// the lease back; only a renewal (sbf apply, up, extend) does.
func leaseEnded(r *state.Sandbox, l *spec.LeaseRecord) bool {
	return r != nil && r.Phase == state.Expired && r.ExpiresAt != nil && r.ExpiresAt.Equal(l.ExpiresAt)
}

// planForget drops the record of a sandbox whose VM is gone once it is
// older than [lease] keep_records, so destroyed sandboxes do not stay in
// the state file forever. A record of unknown age is kept.
func planForget(p *Plan, d Desired, r *state.Sandbox, name string, now time.Time) {
	if r == nil || !r.Phase.Terminal() || d.KeepRecords <= 0 || r.UpdatedAt.IsZero() ||
		now.Sub(r.UpdatedAt) < d.KeepRecords {
		return
	}
	p.Refresh = append(p.Refresh, Refresh{Sandbox: name, Phase: state.Forgotten, Instance: r.Instance, Driver: r.Driver,
		Note: fmt.Sprintf("record dropped: %s since %s, longer than lease.keep_records (%s)",
			r.Phase, r.UpdatedAt.UTC().Format(time.RFC3339), spec.Duration(d.KeepRecords))})
}

func relevantDrivers(driver string, r *state.Sandbox, inst drivers.Instance, exists bool) []string {
	out := []string{driver}
	if r != nil && r.Driver != driver {
		out = append(out, r.Driver)
	}
	if exists && !slices.Contains(out, inst.Driver) {
		out = append(out, inst.Driver)
	}
	return out
}

// planWanted converges a sandbox that holds a live lease: its VM, then
// what runs inside it.
func planWanted(
	p *Plan,
	a Action,
	ds DesiredSandbox,
	r *state.Sandbox,
	inst drivers.Instance,
	exists bool,
	obs Observed,
) {
	if err := obs.Invalid[ds.Name]; err != nil {
		p.Problems = append(p.Problems, Problem{Sandbox: ds.Name, Err: err, Message: err.Error()})
		return
	}
	if err := ds.SourceErr; err != nil && !exists {
		p.Problems = append(p.Problems, Problem{Sandbox: ds.Name, Err: err, Message: err.Error()})
		return
	}
	vm, adopted := planVM(p, a, ds, r, inst, exists)
	var applied map[string]string
	if r != nil {
		applied = r.Applied
	}
	base := a
	base.ExpiresAt = nil
	if vm == Adopt {
		base.Instance, base.Docker = adopted.Instance, adopted.Docker
	}
	planLayers(p, base, ds, applied, obs.Guests[ds.Name], obs.EnvOK, vm, exists && inst.Status == drivers.Booting)
}

// planVM plans the VM itself and returns the kind of action it needs
// ("" when none) and, for an adopt, the action.
func planVM(p *Plan, a Action, ds DesiredSandbox, r *state.Sandbox, inst drivers.Instance, exists bool) (Kind, Action) {
	want := ds.VM
	a.Spec = &want
	if l := ds.Lease; l != nil {
		exp := l.ExpiresAt.UTC()
		a.ExpiresAt = &exp
	}
	if !exists {
		a.Kind, a.Cause = Create, "not found"
		if r != nil && (r.Phase == state.Running || r.Phase == state.Stopped) {
			a.Cause, a.Drift = fmt.Sprintf("recorded %s but missing from %s (drift)", r.Phase, ds.Driver), true
		}
		// The VM a create would make is the derived one; an adopt
		// renames the spec to what it claims.
		want.Name, a.Instance = ds.Instance, ds.Instance
		if a.Source = ds.Source; a.Source != nil {
			a.Cause += "; " + a.Source.String()
		} else {
			planAdopt(p, &a, ds, r) // a copy of another disk is never a spare
		}
		p.Actions = append(p.Actions, a)
		return a.Kind, a
	}
	switch {
	case inst.Driver != ds.Driver:
		a.Kind, a.Cause, a.OldDriver = Replace, fmt.Sprintf("driver %s → %s", inst.Driver, ds.Driver), inst.Driver
	case inst.Status == drivers.Broken:
		a.Kind, a.Cause, a.OldDriver = Replace, "instance is broken", inst.Driver
	default:
		restart, replace := diffSpecs(currentSpec(want, r, inst), want, ds.Driver)
		switch {
		case len(replace) > 0:
			a.Kind, a.Cause, a.OldDriver = Replace, joinCauses(append(replace, restart...))+" (replaces the VM)",
				inst.Driver
		case len(restart) > 0:
			a.Kind, a.Cause, a.WasRunning = Update, joinCauses(restart)+" (restarts the VM)",
				inst.Status == drivers.Running || inst.Status == drivers.Booting
		case inst.Status == drivers.Booting:
			// A start cut short: the VM is not usable until its boot is
			// over, so the start is finished rather than the VM called
			// running (the create's remaining steps follow).
			a.Kind, a.Cause = Start, "booting: its guest is not ready yet"
		case inst.Status != drivers.Running:
			a.Kind, a.Cause = Start, string(inst.Status)
		}
	}
	if a.Kind == Replace {
		a.Force, a.Cause = forceCause(false, inst, a.Cause)
	}
	if a.Kind != "" {
		p.Actions = append(p.Actions, a)
		return a.Kind, a
	}
	if note := recordDrift(r, ds, a.Instance); note != "" {
		p.Refresh = append(p.Refresh, Refresh{Sandbox: a.Sandbox, Phase: state.Running, Instance: a.Instance,
			Driver: ds.Driver, VM: &want, Note: note})
	}
	return "", a
}

// recordDrift says why a converged sandbox's record needs rewriting, or
// "" when it is already right.
func recordDrift(r *state.Sandbox, ds DesiredSandbox, instance string) string {
	switch {
	case r == nil:
		return "adopted " + instance + " into state (it was running with no record)"
	case r.Phase != state.Running:
		return fmt.Sprintf("recorded %s, but %s is running as desired", r.Phase, instance)
	case r.Instance != instance || r.Driver != ds.Driver || r.VM == nil || !state.SpecOf(r.VM).Equal(ds.VM):
		return "record brought up to date with " + instance
	case r.LastError != "":
		return "last error cleared: " + instance + " is running as desired"
	}
	return ""
}

// Forgotten are the sandboxes whose records the plan drops.
func (p *Plan) Forgotten() []string {
	var out []string
	for _, r := range p.Refresh {
		if r.Phase == state.Forgotten {
			out = append(out, r.Sandbox)
		}
	}
	return out
}

// Adopts reports whether the plan adopts an instance (a spare or an
// imported VM).
func (p *Plan) Adopts() bool {
	return slices.ContainsFunc(p.Actions, func(a Action) bool { return a.Kind == Adopt })
}
