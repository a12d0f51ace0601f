package reconcile

import (
	"context"
	"maps"
	"slices"
	"sort"
	"time"

	"github.com/sandboxforge/sbf/reconcile/admission"
	"github.com/sandboxforge/sbf/reconcile/executor"
	"github.com/sandboxforge/sbf/reconcile/plan"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/spec"
)

// markInFlight finds the spares a fill is still making: unlabelled ones
// whose reservation (admission slot) a live process holds. Without a host
// folder nothing can be known, and every unlabelled spare is left alone.
func (e *Engine) markInFlight(ctx context.Context, obs *plan.Observed) {
	for i, s := range obs.Spares {
		if s.Label != nil && s.Label.Spare != nil || s.Label != nil && s.Label.Owner != nil {
			continue
		}
		obs.Spares[i].InFlight = e.HostDir == "" || admission.Creating(ctx, e.HostDir, s.Name)
	}
}

// evictSpare deletes one spare nobody is making or owns, the one that
// would idle out first, so a sandbox's VM fits under the instance cap.
func (e *Engine) evictSpare(
	ctx context.Context,
	r *spec.Resolved,
	listed []drivers.Instance,
	inFlight func(string) bool,
) (bool, error) {
	var cands []drivers.Instance
	for _, inst := range listed {
		if _, _, ok := drivers.ParsePoolName(inst.Name); !ok || inst.Label != nil && inst.Label.Owner != nil {
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
	for _, c := range cands {
		drv, err := e.Drivers(c.Driver, r)
		if err != nil {
			return false, err
		}
		lab := drivers.CapabilitiesOf(drv).Labels
		if lab == nil {
			continue
		}
		drivers.Progressf(ctx, "deleting spare %s to stay within [lease] max_instances", c.Name)
		deleted, err := executor.RetireAndDelete(ctx, drv, lab, e.HostDir, e.holder(), e.Clock.Now(), c.Name)
		if err != nil || deleted {
			return deleted, err
		}
	}
	return false, nil
}

// drainPlan deletes the spares of the workspace's pools (their shapes, or
// made for them), or with all every spare listed; spares a fill is still
// making are left (drain again once they are ready).
func drainPlan(d plan.Desired, obs plan.Observed, all bool) *plan.Plan {
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

// PoolStatus is one pool as `sbf pool status` shows it.
type PoolStatus struct {
	Name    string        `json:"name"`
	Driver  string        `json:"driver"`
	Shape   string        `json:"shape"`
	Size    int           `json:"size"`
	MaxIdle spec.Duration `json:"max_idle"`
	Ready   int           `json:"ready"`
	Booting int           `json:"booting"`
	Spares  []SpareStatus `json:"spares"`
	Problem string        `json:"problem,omitempty"`
}

// SpareStatus is one spare.
type SpareStatus struct {
	Instance  string     `json:"instance"`
	Driver    string     `json:"driver"`
	Pool      string     `json:"pool,omitempty"`
	State     string     `json:"state"` // ready, booting, idle-expired, retired, unfinished, stopped, broken
	Runtime   bool       `json:"runtime_ready"`
	CreatedAt *time.Time `json:"created_at,omitempty"`
	IdleUntil *time.Time `json:"idle_until,omitempty"`
}

// PoolsReport is `sbf pool status --json`: the workspace's pools, then
// the spares no pool of it describes (other workspaces' pools).
type PoolsReport struct {
	Pools  []PoolStatus  `json:"pools"`
	Others []SpareStatus `json:"other_spares"`
}

// PoolsReport describes the pools and spares as observed.
func (res *Result) PoolsReport() PoolsReport {
	out := PoolsReport{Pools: []PoolStatus{}, Others: []SpareStatus{}}
	problems := map[string]string{}
	if res.Plan != nil {
		for _, pr := range res.Plan.Problems {
			problems[pr.Sandbox] = pr.Message
		}
	}
	claimed := map[string]bool{}
	for _, name := range slices.Sorted(maps.Keys(res.Desired.Pools)) {
		pl := res.Desired.Pools[name]
		ps := PoolStatus{Name: name, Driver: pl.Driver, Shape: pl.Shape, Size: pl.Size, MaxIdle: spec.Duration(pl.MaxIdle),
			Spares: []SpareStatus{}, Problem: problems["pool."+name]}
		for _, s := range res.Observed.Spares {
			if s.Driver != pl.Driver || s.Shape() != pl.Shape {
				continue
			}
			claimed[s.Name] = true
			st := spareStatus(s, res.Now)
			switch st.State {
			case "ready":
				ps.Ready++
			case "booting":
				ps.Booting++
			}
			ps.Spares = append(ps.Spares, st)
		}
		out.Pools = append(out.Pools, ps)
	}
	for _, s := range res.Observed.Spares {
		if !claimed[s.Name] {
			out.Others = append(out.Others, spareStatus(s, res.Now))
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
	case s.Status != drivers.Running:
		st.State = string(s.Status)
	case !now.Before(l.Spare.IdleUntil):
		st.State = "idle-expired"
	default:
		st.State = "ready"
	}
	if l != nil && l.Spare != nil {
		created, until := l.Spare.CreatedAt, l.Spare.IdleUntil
		st.Pool, st.CreatedAt, st.IdleUntil, st.Runtime = l.Spare.Pool, &created, &until, l.Spare.Docker != ""
	}
	return st
}

// NextIdleOut is when the first ready spare the pass saw idles out (zero
// when none): the loop's pool pass wakes then to replace it.
func (res *Result) NextIdleOut() time.Time {
	var next time.Time
	for _, s := range res.Observed.Spares {
		if s.Label == nil || s.Label.Spare == nil || !res.Now.Before(s.Label.Spare.IdleUntil) {
			continue
		}
		if t := s.Label.Spare.IdleUntil; next.IsZero() || t.Before(next) {
			next = t
		}
	}
	return next
}
