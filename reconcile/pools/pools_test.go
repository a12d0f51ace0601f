package pools

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/reconcile/plan"
)

var t0 = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

const shapeA, shapeB = "aaaaaaaa", "bbbbbbbb"

// spare is a ready spare of ws's pool, idle until until.
func spare(shape string, n int, ws string, until time.Time) drivers.Instance {
	return drivers.Instance{Name: drivers.PoolInstanceName(shape, n), Driver: "sim", Status: drivers.Running,
		Label: &drivers.Label{Spare: &drivers.SpareLabel{Pool: "p", Workspace: ws, Shape: shape, CreatedAt: t0,
			IdleUntil: until}}}
}

func bare(shape string, n int) drivers.Instance {
	return drivers.Instance{Name: drivers.PoolInstanceName(shape, n), Driver: "sim", Status: drivers.Running}
}

func names(list []drivers.Instance) string {
	var out []string
	for _, i := range list {
		out = append(out, i.Name)
	}
	return strings.Join(out, " ")
}

// A teammate's spare on a shared backend is never evicted: it does not count against this
// host's cap, so deleting it frees nothing here.
func TestEvictionTakesWhatACrashLeftFirstThenTheFirstToIdleOut(t *testing.T) {
	owned := spare(shapeA, 1, "ws", t0.Add(time.Hour))
	owned.Label.Owner = &drivers.Owner{WorkspaceID: "ws", Sandbox: "api"}
	making, left := bare(shapeA, 2), bare(shapeA, 3)
	late, early := spare(shapeA, 4, "ws", t0.Add(2*time.Hour)), spare(shapeB, 5, "ws", t0.Add(time.Hour))
	sandboxVM := drivers.Instance{Name: drivers.Prefix + "0123abcd-api", Driver: "sim"}
	teammates := spare(shapeA, 6, "theirs", t0)
	teammates.HeldByAnother = true
	inFlight := func(name string) bool { return name == making.Name }
	got := names(Evictable([]drivers.Instance{owned, making, late, sandboxVM, early, left, teammates}, inFlight))
	if want := names([]drivers.Instance{left, early, late}); got != want {
		t.Errorf("eviction order %q, want %q", got, want)
	}
}

func TestADrainLeavesSparesInFlightAndOtherWorkspacesPools(t *testing.T) {
	d := plan.Desired{WorkspaceID: "ws", Pools: map[string]plan.DesiredPool{"p": {Driver: "sim", Shape: shapeA}}}
	ours := spare(shapeB, 1, "ws", t0.Add(time.Hour))
	sameShape := spare(shapeA, 2, "other", t0.Add(time.Hour))
	others := spare(shapeB, 3, "other", t0.Add(time.Hour))
	obs := plan.Observed{Spares: []plan.Spare{{Instance: ours}, {Instance: sameShape}, {Instance: others},
		{Instance: bare(shapeA, 4), InFlight: true}}}
	deleted := func(p *plan.Plan) string {
		var out []string
		for _, a := range p.Actions {
			if a.Kind != plan.Delete {
				t.Errorf("a drain %s", a.Kind)
			}
			out = append(out, a.Instance)
		}
		return strings.Join(out, " ")
	}
	if got, want := deleted(DrainPlan(d, obs, false)), ours.Name+" "+sameShape.Name; got != want {
		t.Errorf("drain deletes %q, want %q", got, want)
	}
	if got, want := deleted(DrainPlan(d, obs, true)), ours.Name+" "+sameShape.Name+" "+others.Name; got != want {
		t.Errorf("drain all deletes %q, want %q", got, want)
	}
}

func TestTheReportSaysWhatEachSpareIs(t *testing.T) {
	d := plan.Desired{Pools: map[string]plan.DesiredPool{"p": {Driver: "sim", Shape: shapeA, Size: 3}}}
	stopped := spare(shapeA, 3, "ws", t0.Add(time.Hour))
	stopped.Status = drivers.Stopped
	retired := spare(shapeB, 5, "other", t0.Add(time.Hour))
	retired.Label.Owner = &drivers.Owner{Retired: true}
	obs := plan.Observed{Spares: []plan.Spare{{Instance: spare(shapeA, 1, "ws", t0.Add(time.Hour))},
		{Instance: spare(shapeA, 2, "ws", t0)}, {Instance: stopped}, {Instance: bare(shapeA, 4), InFlight: true},
		{Instance: retired}, {Instance: bare(shapeB, 6)}}}
	rep := ReportOf(d, obs, nil, t0)
	var states []string
	for _, s := range rep.Pools[0].Spares {
		states = append(states, s.State)
	}
	for _, s := range rep.Others {
		states = append(states, s.State)
	}
	want := []string{"ready", "idle-expired", "stopped", "booting", "retired", "unfinished"}
	if !slices.Equal(states, want) || rep.Pools[0].Ready != 1 || rep.Pools[0].Booting != 1 {
		t.Errorf("states %v (want %v), pool %+v", states, want, rep.Pools[0])
	}
}

func TestTheNextIdleOutIsTheFirstReadySpareToIdleOut(t *testing.T) {
	obs := plan.Observed{Spares: []plan.Spare{{Instance: spare(shapeA, 1, "ws", t0)},
		{Instance: spare(shapeA, 2, "ws", t0.Add(2*time.Hour))}, {Instance: bare(shapeA, 3)},
		{Instance: spare(shapeA, 4, "ws", t0.Add(time.Hour))}}}
	if got := NextIdleOut(obs, t0); !got.Equal(t0.Add(time.Hour)) {
		t.Errorf("next idle-out %v", got)
	}
	if got := NextIdleOut(plan.Observed{}, t0); !got.IsZero() {
		t.Errorf("without spares: %v", got)
	}
}
