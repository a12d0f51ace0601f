package reconcile

import (
	"context"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/sandboxforge/sbf/reconcile/plan"
	"github.com/sandboxforge/sbf/spec"
	"github.com/sandboxforge/sbf/state"
)

// recordedLeases names the sandboxes whose lease ends a run recorded.
func recordedLeases(res *Result) []string {
	var out []string
	for _, l := range res.Outcome.Leases {
		out = append(out, l.Sandbox)
	}
	return out
}

// A renewal alone takes no sandbox's lock: an apply whose clock moved
// renews api's lease while another run holds api (a run that waited for
// api's lock would fail after 10 ms), and records the new end.
func TestARenewalTakesNoSandboxLock(t *testing.T) {
	h := newHarness(t, "[vm]\ndriver = \"sim\"\n[sandboxes.api]\n[sandboxes.web]\n")
	h.mustApply()
	h.eng.LockTimeout = 10 * time.Millisecond
	holdSandbox(t, h, "api")
	h.clock.Advance(time.Minute)
	res, err := h.apply()
	if err != nil {
		t.Fatalf("a renewing apply beside a run holding api: %v", err)
	}
	if got := recordedLeases(res); !slices.Equal(got, []string{"api", "web"}) || !res.Plan.Empty() {
		t.Fatalf("a renewing apply recorded the leases of %v, planned %s", got, steps(res.Plan))
	}
	want := t0.Add(time.Minute + 30*time.Minute)
	if end := h.mustPlanState(t).Sandboxes["api"].ExpiresAt; end == nil || !end.Equal(want) {
		t.Errorf("api's record ends at %v after the renewal, want %v", end, want)
	}
}

// A renewal recorded without the sandbox's lock is a compare-and-set: here
// another run records api's lease end after this run's first listing (so
// after it planned from the old end); this run must leave that end as it
// is, still renew web's, and tell no backend it renewed api.
func TestARenewalKeepsWhatAnotherRunRecordedMeanwhile(t *testing.T) {
	h := newHarness(t, "[vm]\ndriver = \"sim\"\n[sandboxes.api]\n[sandboxes.web]\n")
	h.mustApply()
	h.clock.Advance(time.Minute)
	theirs := t0.Add(5 * time.Hour)
	var once sync.Once
	a := engineFor(h, func(name string, r *spec.Resolved) (Driver, error) {
		d, err := h.driver(name, r)
		return hookedList{Driver: d, once: &once, hook: func() { recordEnd(t, h, "api", theirs) }}, err
	})
	res, err := a.Apply(context.Background(), h.ws(), Options{Intent: Renew{All: true}})
	if err != nil {
		t.Fatal(err)
	}
	if got := recordedLeases(res); !slices.Equal(got, []string{"web"}) {
		t.Errorf("the run recorded the leases of %v, want web's alone", got)
	}
	rec := h.mustPlanState(t)
	if end := rec.Sandboxes["api"].ExpiresAt; end == nil || !end.Equal(theirs) {
		t.Errorf("api's record ends at %v, want %v (the other run's)", end, theirs)
	}
	if end := rec.Sandboxes["web"].ExpiresAt; end == nil || !end.Equal(t0.Add(31*time.Minute)) {
		t.Errorf("web's record ends at %v after the renewal", end)
	}
}

// recordEnd writes a sandbox's lease end into the state as another run would.
func recordEnd(t *testing.T, h *harness, name string, end time.Time) {
	t.Helper()
	_, id, err := spec.WorkspaceIdentity(h.root)
	if err != nil {
		t.Fatal(err)
	}
	store, err := state.Open(context.Background(), filepath.Join(h.root, spec.Dir), h.root, id, h.eng.holder(),
		time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	if err := store.Write(func(tx *state.Tx) { tx.Sandbox(name).ExpiresAt = &end }); err != nil {
		t.Fatal(err)
	}
}

// Only a renewal on a sandbox the plan takes no other step on goes without
// the lock; an acquisition, or a renewal beside an action, does not.
func TestRenewalsAloneAreRenewalsWithoutOtherSteps(t *testing.T) {
	old := t0.Add(time.Hour)
	p := &plan.Plan{
		Actions: []plan.Action{{Sandbox: "web", Kind: plan.Start}},
		Leases: []plan.LeaseRenewal{{Sandbox: "api", Old: &old, New: old.Add(time.Minute)},
			{Sandbox: "web", Old: &old, New: old.Add(time.Minute)},
			{Sandbox: "db", New: old, Acquired: true}},
	}
	if got := p.RenewalsAlone(); len(got) != 1 || !got["api"] {
		t.Errorf("renewals alone: %v, want api", got)
	}
	held := p.Holding(func(string) bool { return false }, false)
	if len(held.Leases) != 1 || held.Leases[0].Sandbox != "api" || len(held.Actions) != 0 {
		t.Errorf("a run holding nothing keeps %+v", held)
	}
}
