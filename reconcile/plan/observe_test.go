package plan

import (
	"testing"
	"time"

	"github.com/sandboxforge/sbf/drivers"
)

// On a backend a team shares, a teammate's spare is listed but is not this workspace's to
// adopt, trim or collect; a teammate's spare this workspace adopted is its sandbox's.
func TestATeammatesSpareIsNotOffered(t *testing.T) {
	until := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	spare := func(n int, ws string, another bool) drivers.Instance {
		return drivers.Instance{Name: drivers.PoolInstanceName("aaaaaaaa", n), Status: drivers.Running,
			HeldByAnother: another, Label: &drivers.Label{Spare: &drivers.SpareLabel{Pool: "p", Workspace: ws,
				Shape: "aaaaaaaa", IdleUntil: until}}}
	}
	mine, theirs, adopted := spare(1, "ws", false), spare(2, "other", true), spare(3, "other", true)
	adopted.Label.Owner = &drivers.Owner{WorkspaceID: "ws", Sandbox: "api"}
	obs := NewObserved("ws", map[string][]drivers.Instance{"kubevirt": {mine, theirs, adopted}}, nil,
		map[string]bool{"kubevirt": true})
	if len(obs.Spares) != 1 || obs.Spares[0].Name != mine.Name {
		t.Errorf("spares offered: %+v; want only this host's %s", obs.Spares, mine.Name)
	}
	if obs.Owned["api"] != adopted.Name {
		t.Errorf("owned: %v; want api in the teammate's spare it adopted, %s", obs.Owned, adopted.Name)
	}
	if !obs.PoolNames[theirs.Name] {
		t.Errorf("pool names: %v; a teammate's spare's name is still taken", obs.PoolNames)
	}
}
