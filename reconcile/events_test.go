package reconcile

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"
)

// eventLog keeps the events a listener heard.
type eventLog struct {
	mu  sync.Mutex
	got []Event
}

func (l *eventLog) hear(ev Event) {
	l.mu.Lock()
	l.got = append(l.got, ev)
	l.mu.Unlock()
}

func (l *eventLog) events() []Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.got)
}

// Every event of a run names the workspace it converges, its run and the
// run's count of actions, an action's its place among them; each lease
// end the run records is an event too. Nested WithEvents listeners (an
// MCP call's log lines and its progress) both hear every event.
func TestEventsNameTheirRunWorkspaceAndSteps(t *testing.T) {
	h := newHarness(t, "[vm]\ndriver = \"sim\"\n[sandboxes.api]\n[sandboxes.db]\n")
	var outer, inner eventLog
	ctx := WithEvents(WithEvents(context.Background(), outer.hear), inner.hear)
	res, err := h.eng.Apply(ctx, h.ws(), Options{Intent: Renew{All: true}})
	if err != nil {
		t.Fatal(err)
	}
	got := inner.events()
	if len(got) == 0 || len(outer.events()) != len(got) {
		t.Fatalf("the inner listener heard %d events, the outer %d", len(got), len(outer.events()))
	}
	steps, leases := map[int]bool{}, map[string]bool{}
	for _, ev := range got {
		if ev.Workspace != res.Resolved.Root || ev.Run == 0 || ev.Run != got[0].Run ||
			ev.Steps != len(res.Plan.Actions) {
			t.Errorf("event %+v: want workspace %s, run %d, %d steps", ev, res.Resolved.Root, got[0].Run,
				len(res.Plan.Actions))
		}
		switch {
		case ev.Lease != nil:
			leases[ev.Lease.Sandbox] = ev.Lease.Acquired && ev.Done && ev.Sandbox == ev.Lease.Sandbox
		case ev.Done:
			steps[ev.Step] = ev.Step >= 1 && ev.Step <= ev.Steps
		}
	}
	if len(steps) != len(res.Plan.Actions) {
		t.Errorf("steps done %v of %d actions", steps, len(res.Plan.Actions))
	}
	for step, ok := range steps {
		if !ok {
			t.Errorf("step %d is outside 1..%d", step, len(res.Plan.Actions))
		}
	}
	if !leases["api"] || !leases["db"] || len(leases) != 2 {
		t.Errorf("lease events %v, want api and db acquired", leases)
	}

	var again eventLog
	first := got[0].Run
	if _, err := h.eng.Apply(WithEvents(context.Background(), again.hear), h.ws(),
		Options{Intent: Extend{Sandbox: "api", By: time.Hour}}); err != nil {
		t.Fatal(err)
	}
	renewed := again.events()
	if len(renewed) != 1 || renewed[0].Lease == nil || renewed[0].Lease.Acquired || renewed[0].Lease.Old == nil ||
		renewed[0].Run == first || renewed[0].Steps != 0 {
		t.Errorf("an extension's events: %+v (the first run was %d)", renewed, first)
	}
}
