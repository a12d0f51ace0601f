package reconcile

import (
	"testing"
	"time"

	"github.com/sandboxforge/sbf/reconcile/plan"
	"github.com/sandboxforge/sbf/state"
)

// A failed create is a failure in the outcome, never a change done; the
// sandbox whose create worked counts as added.
func TestOutcomeNeverCountsAFailedChangeAsDone(t *testing.T) {
	h := newHarness(t, twoSandboxes)
	h.faults = "create:web=fail"
	res, err := h.apply()
	if err == nil || res == nil || res.Outcome == nil {
		t.Fatalf("apply with a failing create: err %v, res %+v", err, res)
	}
	o := res.Outcome
	if done := o.DoneSummary(); done.Add != 1 || len(o.Failed) != 1 || o.Failed[0].Action.Sandbox != "web" ||
		o.Failed[0].Action.Kind != plan.Create || o.OK() {
		t.Errorf("outcome: done %+v, failed %+v", done, o.Failed)
	}
	if o.FailedSandbox("api") || !o.FailedSandbox("web") {
		t.Error("FailedSandbox names the wrong sandbox")
	}
	rep := o.Report()
	if len(rep.Failed) != 1 || rep.Failed[0].Error == "" || rep.NotAttempted == nil {
		t.Errorf("report: %+v", rep)
	}
}

// Every apply renews the leases it keeps: the renewal is a plan entry
// with the old and new end, and is recorded in the state file, so the
// next plan has none and a destroy leaves the renewed end on record.
func TestApplyRecordsLeaseRenewals(t *testing.T) {
	h := newHarness(t, twoSandboxes)
	first := h.mustApply()
	if len(first.Plan.Leases) != 2 || !first.Plan.Leases[0].Acquired {
		t.Fatalf("first apply's leases: %+v", first.Plan.Leases)
	}
	h.clock.Advance(10 * time.Minute)
	p := h.plan()
	if len(p.Actions) != 0 || len(p.Leases) != 2 {
		t.Fatalf("plan after 10 minutes: actions %+v, leases %+v", p.Actions, p.Leases)
	}
	l := p.Leases[0]
	if l.Acquired || l.Old == nil || l.New.Sub(*l.Old) != 10*time.Minute {
		t.Errorf("renewal: %+v", l)
	}
	res := h.mustApply()
	if len(res.Outcome.Leases) != 2 {
		t.Errorf("leases recorded: %+v", res.Outcome.Leases)
	}
	if got := res.recorded.Sandboxes["api"].ExpiresAt; got == nil || !got.Equal(l.New) {
		t.Errorf("state records expires_at %v, want %v", got, l.New)
	}
	if again := h.plan(); len(again.Leases) != 0 {
		t.Errorf("the plan right after a renewal renews again: %+v", again.Leases)
	}
	if _, err := h.converge(Options{Intent: Destroy{All: true}}); err != nil {
		t.Fatal(err)
	}
	if got := h.mustPlanState(t).Sandboxes["api"].ExpiresAt; got == nil || !got.Equal(l.New) {
		t.Errorf("after destroy the record says the lease ended %v, want the renewed %v", got, l.New)
	}
}

// --no-renew (Keep) plans no lease entry and moves no lease.
func TestKeepRenewsNothing(t *testing.T) {
	h := newHarness(t, twoSandboxes)
	first := h.mustApply()
	end := first.Resolved.Config.Leases["api"].ExpiresAt
	h.clock.Advance(10 * time.Minute)
	res, err := h.planWith(Options{Intent: Keep{All: true}})
	if err != nil || len(res.Plan.Leases) != 0 || !res.Plan.Empty() {
		t.Fatalf("plan --no-renew: err %v, plan %+v", err, res.Plan)
	}
	res = h.mustApplyWith(Options{Intent: Keep{All: true}})
	if got := res.Resolved.Config.Leases["api"].ExpiresAt; !got.Equal(end) || len(res.Outcome.Leases) != 0 {
		t.Errorf("apply --no-renew moved the lease to %v (was %v), recorded %+v", got, end, res.Outcome.Leases)
	}
}

func (h *harness) mustPlanState(t *testing.T) *state.File {
	t.Helper()
	res, err := h.planWith(Options{Intent: Reconcile{}, Ended: true}) // as status --all sees it
	if err != nil {
		t.Fatal(err)
	}
	return res.recorded
}
