// Package pools decides about warm spares: which a fill is still making,
// which one a sandbox's VM displaces under the instance cap, what a drain
// deletes, how the pools stand, when the first spare idles out. It holds
// the host-wide pool lock every claim of a spare is made under (lock.go).
// The engine runs its pool passes; the executor makes, adopts and retires
// spares with it.
package pools

import (
	"context"
	"maps"
	"slices"
	"sort"
	"time"

	"github.com/sandboxforge/sbf/reconcile/admission"
	"github.com/sandboxforge/sbf/reconcile/plan"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/spec"
)

// MarkInFlight finds the spares a fill is still making: unlabelled ones
// whose reservation (admission slot) a live process holds. Without a host
// folder nothing can be known, and every unlabelled spare is left alone.
func MarkInFlight(ctx context.Context, hostDir string, obs *plan.Observed) {
	for i, s := range obs.Spares {
		if s.Label != nil && s.Label.Spare != nil || s.Label != nil && s.Label.Owner != nil {
			continue
		}
		obs.Spares[i].InFlight = hostDir == "" || admission.Creating(ctx, hostDir, s.Name)
	}
}

// Evictable are the spares a sandbox's VM may displace under the instance
// cap, those nobody is making (inFlight) or owns, in the order they go:
// the one that would idle out first leads.
func Evictable(listed []drivers.Instance, inFlight func(string) bool) []drivers.Instance {
	var cands []drivers.Instance
	for _, inst := range listed {
		if _, _, ok := drivers.ParsePoolName(inst.Name); !ok || inst.Label != nil && inst.Label.Owner != nil ||
			inst.HeldByAnother { // a teammate's: it does not count against this host's cap
			continue
		}
		if (inst.Label == nil || inst.Label.Spare == nil) && inFlight(inst.Name) {
			continue
		}
		cands = append(cands, inst)
	}
	idle := func(i drivers.Instance) time.Time {
		if i.Label == nil || i.Label.Spare == nil {
			return time.Time{} // left by a crash: first to go
		}
		return i.Label.Spare.IdleUntil
	}
	sort.Slice(cands, func(i, j int) bool {
		a, b := idle(cands[i]), idle(cands[j])
		return a.Before(b) || a.Equal(b) && cands[i].Name < cands[j].Name
	})
	return cands
}

// DrainPlan deletes the spares of the workspace's pools (their shapes, or
// made for them), or with all every spare listed; spares a fill is still
// making are left (drain again once they are ready).
func DrainPlan(d plan.Desired, obs plan.Observed, all bool) *plan.Plan {
	shapes := map[string]bool{}
	for _, p := range d.Pools {
		shapes[p.Driver+"/"+p.Shape] = true
	}
	p := &plan.Plan{}
	for _, s := range obs.Spares {
		ours := s.Label != nil && s.Label.Spare != nil && s.Label.Spare.Workspace == d.WorkspaceID
		if s.InFlight || !all && !ours && !shapes[s.Driver+"/"+s.Shape()] {
			continue
		}
		p.Actions = append(p.Actions, plan.SpareDelete(s, "drained"))
	}
	return p
}

// Status is one pool as `sbf pool status` shows it.
type Status struct {
	Name    string        `json:"name"`
	Driver  string        `json:"driver"`
	Shape   string        `json:"shape"`
	Size    int           `json:"size"`
	MaxIdle spec.Duration `json:"max_idle"`
	Ready   int           `json:"ready"`
	Booting int           `json:"booting"`
	// MemoryTemplate says the pool keeps one; Templates counts those ready.
	MemoryTemplate bool          `json:"memory_template"`
	Templates      int           `json:"templates"`
	Spares         []SpareStatus `json:"spares"`
	Problem        string        `json:"problem,omitempty"`
}

// SpareStatus is one spare.
type SpareStatus struct {
	Instance string `json:"instance"`
	Driver   string `json:"driver"`
	Pool     string `json:"pool,omitempty"`
	// ready, template, booting, idle-expired, retired, unfinished, stopped, broken
	State     string     `json:"state"`
	Runtime   bool       `json:"runtime_ready"`
	CreatedAt *time.Time `json:"created_at,omitempty"`
	IdleUntil *time.Time `json:"idle_until,omitempty"`
}

// Report is `sbf pool status --json`: the workspace's pools, then the
// spares no pool of it describes (other workspaces' pools).
type Report struct {
	Pools  []Status      `json:"pools"`
	Others []SpareStatus `json:"other_spares"`
}

// ReportOf describes the pools d declares and the spares obs saw at now,
// with the problems p met (p may be nil).
func ReportOf(d plan.Desired, obs plan.Observed, p *plan.Plan, now time.Time) Report {
	out := Report{Pools: []Status{}, Others: []SpareStatus{}}
	problems := map[string]string{}
	if p != nil {
		for _, pr := range p.Problems {
			problems[pr.Sandbox] = pr.Message
		}
	}
	claimed := map[string]bool{}
	for _, name := range slices.Sorted(maps.Keys(d.Pools)) {
		pl := d.Pools[name]
		ps := Status{Name: name, Driver: pl.Driver, Shape: pl.Shape, Size: pl.Size, MaxIdle: spec.Duration(pl.MaxIdle),
			Spares: []SpareStatus{}, Problem: problems["pool."+name], MemoryTemplate: pl.Memory}
		for _, s := range obs.Spares {
			if s.Driver != pl.Driver || s.Shape() != pl.Shape {
				continue
			}
			claimed[s.Name] = true
			st := spareStatus(s, now)
			switch st.State {
			case "ready":
				ps.Ready++
			case "booting":
				ps.Booting++
			case "template":
				ps.Templates++
			}
			ps.Spares = append(ps.Spares, st)
		}
		out.Pools = append(out.Pools, ps)
	}
	for _, s := range obs.Spares {
		if !claimed[s.Name] {
			out.Others = append(out.Others, spareStatus(s, now))
		}
	}
	return out
}

func spareStatus(s plan.Spare, now time.Time) SpareStatus {
	st := SpareStatus{Instance: s.Name, Driver: s.Driver}
	l := s.Label
	switch {
	case l != nil && l.Owner != nil && l.Owner.Retired:
		st.State = "retired"
	case l == nil || l.Spare == nil:
		st.State = map[bool]string{true: "booting", false: "unfinished"}[s.InFlight]
	case s.Status != drivers.Running && !(l.Spare.Memory && s.Status == drivers.Stopped):
		st.State = string(s.Status) // a template is kept stopped
	case !now.Before(l.Spare.IdleUntil):
		st.State = "idle-expired"
	case l.Spare.Memory && s.Status == drivers.Stopped:
		st.State = "template"
	case l.Spare.Memory:
		st.State = string(s.Status)
	default:
		st.State = "ready"
	}
	if l != nil && l.Spare != nil {
		created, until := l.Spare.CreatedAt, l.Spare.IdleUntil
		st.Pool, st.CreatedAt, st.IdleUntil, st.Runtime = l.Spare.Pool, &created, &until, l.Spare.Docker != ""
	}
	return st
}

// NextIdleOut is when the first ready spare obs saw idles out after now
// (zero when none): the loop's pool pass wakes then to replace it.
func NextIdleOut(obs plan.Observed, now time.Time) time.Time {
	var next time.Time
	for _, s := range obs.Spares {
		if s.Label == nil || s.Label.Spare == nil || !now.Before(s.Label.Spare.IdleUntil) {
			continue
		}
		if t := s.Label.Spare.IdleUntil; next.IsZero() || t.Before(next) {
			next = t
		}
	}
	return next
}
