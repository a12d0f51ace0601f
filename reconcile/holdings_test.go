package reconcile

import (
	"testing"
	"time"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/reconcile/plan"
	"github.com/sandboxforge/sbf/spec"
)

// Each instance a shared backend lists says what it is: this workspace's
// sandbox, a teammate's, a ready spare, a spare past its max_idle (the next
// run of its pool replaces it) or a memory template (never adopted).
func TestEachHoldingSaysWhatItIs(t *testing.T) {
	const ws = "ws_0123456789abcdef"
	spare := func(memory bool, idleUntil time.Time) *drivers.Label {
		return &drivers.Label{Spare: &drivers.SpareLabel{Pool: "p", Memory: memory, IdleUntil: idleUntil}}
	}
	res := &Result{Resolved: &spec.Resolved{WorkspaceID: ws}, Now: t0, Observed: plan.Observed{
		Holdings: []drivers.Instance{
			{Name: drivers.InstanceName(ws, "api"), Holder: "alice"},
			{Name: drivers.InstanceName("ws_fedcba9876543210", "web"), Holder: "bob"},
			{Name: "sbf-pool-1", Holder: "alice", Label: spare(false, t0.Add(time.Minute))},
			{Name: "sbf-pool-2", Holder: "alice", Label: spare(false, t0)},
			{Name: "sbf-pool-3", Holder: "alice", Label: spare(true, t0.Add(-time.Hour))},
			{Name: "sbf-pool-4", Holder: "bob", Label: &drivers.Label{Spare: &drivers.SpareLabel{Pool: "p"},
				Owner: &drivers.Owner{WorkspaceID: ws, Sandbox: "adopted"}}},
		}}}
	type what struct {
		sandbox                     string
		mine, spare, idle, template bool
	}
	want := map[string]what{
		drivers.InstanceName(ws, "api"):                    {sandbox: "api", mine: true},
		drivers.InstanceName("ws_fedcba9876543210", "web"): {sandbox: "web"},
		"sbf-pool-1": {spare: true},
		"sbf-pool-2": {spare: true, idle: true},
		"sbf-pool-3": {template: true},
		"sbf-pool-4": {sandbox: "adopted", mine: true},
	}
	rows := res.Holdings()
	if len(rows) != len(want) {
		t.Fatalf("%d rows, want %d: %+v", len(rows), len(want), rows)
	}
	for _, h := range rows {
		got := what{sandbox: h.Sandbox, mine: h.Mine, spare: h.Spare, idle: h.Idle, template: h.Template}
		if got != want[h.Instance] {
			t.Errorf("%s: %+v, want %+v", h.Instance, got, want[h.Instance])
		}
	}
	if rows[0].Holder != "alice" || rows[len(rows)-1].Holder != "bob" {
		t.Errorf("not by holder: %+v", rows)
	}
}
