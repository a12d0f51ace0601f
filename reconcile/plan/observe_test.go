package plan

import (
	"slices"
	"testing"
	"time"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/spec"
	"github.com/sandboxforge/sbf/state"
)

// On a backend a team shares, a teammate's ready spare is offered to this workspace's creates
// (after its own), but is never this workspace's to trim or collect; a teammate's spare this
// workspace adopted is its sandbox's.
func TestATeammatesSpareIsOfferedButNotKept(t *testing.T) {
	now := time.Date(2026, 11, 30, 11, 0, 0, 0, time.UTC)
	vm := drivers.Spec{CPUs: 1, MemoryGiB: 1, DiskGiB: 5}
	shape := drivers.Shape("kubevirt", vm)
	spare := func(n int, ws string, another bool, until time.Time) drivers.Instance {
		return drivers.Instance{Name: drivers.PoolInstanceName(shape, n), Status: drivers.Running,
			HeldByAnother: another, Label: &drivers.Label{Spare: &drivers.SpareLabel{Pool: "p", Workspace: ws,
				Shape: shape, IdleUntil: until}}}
	}
	later := now.Add(time.Hour)
	mine, theirs := spare(1, "elsewhere", false, later), spare(2, "other", true, later)
	adopted := spare(3, "other", true, later)
	idle := spare(4, "other", true, now.Add(-time.Minute)) // past its max_idle: its maker's to collect
	adopted.Label.Owner = &drivers.Owner{WorkspaceID: "ws", Sandbox: "api"}
	listed := []drivers.Instance{mine, theirs, adopted, idle}
	obs := NewObserved("ws", map[string][]drivers.Instance{"kubevirt": listed}, nil, map[string]bool{"kubevirt": true})
	if len(obs.Spares) != 1 || obs.Spares[0].Name != mine.Name {
		t.Errorf("own spares: %+v; want only this host's %s", obs.Spares, mine.Name)
	}
	if got := names(obs.Teammates); !slices.Equal(got, []string{theirs.Name, idle.Name}) {
		t.Errorf("teammates' spares: %v", got)
	}
	if obs.Owned["api"] != adopted.Name {
		t.Errorf("owned: %v; want api in the teammate's spare it adopted, %s", obs.Owned, adopted.Name)
	}
	if !obs.PoolNames[theirs.Name] {
		t.Errorf("pool names: %v; a teammate's spare's name is still taken", obs.PoolNames)
	}

	lease := &spec.LeaseRecord{AcquiredAt: now, ExpiresAt: later}
	sandbox := func(name string) DesiredSandbox {
		return DesiredSandbox{Name: name, Instance: drivers.InstanceName("ws", name), Driver: "kubevirt", VM: vm,
			Lease: lease, TTL: time.Hour}
	}
	d := Desired{WorkspaceID: "ws", Sandboxes: map[string]DesiredSandbox{"web": sandbox("web"), "db": sandbox("db")}}
	obs = NewObserved("ws", map[string][]drivers.Instance{"kubevirt": {mine, theirs, idle}}, nil,
		map[string]bool{"kubevirt": true})
	p := Compute(d, &state.File{}, obs, now)
	for _, a := range p.Actions {
		if a.Instance == idle.Name || slices.Contains(a.Warm, idle.Name) {
			t.Errorf("%s %s: a teammate's idle spare is theirs to collect, never adopted or deleted here", a.Kind, a.Instance)
		}
	}
	adopts := map[string]Action{}
	for _, a := range p.Actions {
		adopts[a.Sandbox] = a
	}
	db, web := adopts["db"], adopts["web"]
	if db.Kind != Adopt || !slices.Equal(db.Warm, []string{mine.Name, theirs.Name}) ||
		!slices.Equal(db.Theirs, []string{theirs.Name}) {
		t.Errorf("db: %s warm %v theirs %v; want its own spare first, then the teammate's", db.Kind, db.Warm, db.Theirs)
	}
	if web.Kind != Adopt || !slices.Equal(web.Warm, []string{theirs.Name, mine.Name}) || web.Instance != theirs.Name {
		t.Errorf("web: %s %s warm %v; want the teammate's spare first, db taking this host's", web.Kind,
			web.Instance, web.Warm)
	}
}

func names(spares []Spare) []string {
	var out []string
	for _, s := range spares {
		out = append(out, s.Name)
	}
	return out
}
