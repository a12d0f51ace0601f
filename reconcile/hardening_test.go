package reconcile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sandboxforge/sbf/reconcile/plan"

	"github.com/sandboxforge/sbf/spec"
	"github.com/sandboxforge/sbf/state"
)

// A lease end hand-edited to 2099 in the managed file does not outlive
// max_lifetime: the loop expires the sandbox at acquisition + max_lifetime,
// and the next edit writes the bounded end back.
func TestHandEditedLeaseEndExpiresAtMaxLifetime(t *testing.T) {
	h := newHarness(t, twoSandboxes)
	h.mustApply()
	path := filepath.Join(h.root, spec.Dir, spec.OverridesFile)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	edited := strings.ReplaceAll(string(data), t0.Add(30*time.Minute).Format(time.RFC3339), "2099-01-01T00:00:00Z")
	if edited == string(data) {
		t.Fatalf("no lease end to edit in:\n%s", data)
	}
	if err := os.WriteFile(path, []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	h.clock.Advance(23 * time.Hour)
	if res, err := h.reconcile(); err != nil || !res.Plan.Empty() {
		t.Fatalf("within max_lifetime: %v %+v", err, res.Plan)
	}
	if _, err := h.converge(Options{Intent: Extend{Sandbox: "api", By: time.Hour}}); err == nil {
		t.Error("an extension past max_lifetime was accepted on top of the edited end")
	}
	h.clock.Advance(time.Hour)
	res, err := h.reconcile()
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Plan.Actions) != 2 || res.Plan.Actions[0].Kind != plan.Expire {
		t.Fatalf("at acquisition + 24h: plan = %+v", res.Plan.Actions)
	}
	if res.recorded.Sandboxes["api"].Phase != state.Expired || len(h.world()) != 0 {
		t.Errorf("api = %+v, world = %v", res.recorded.Sandboxes["api"], h.world())
	}
	if len(res.Resolved.Warnings) != 2 {
		t.Errorf("warnings = %v, want one per edited lease", res.Resolved.Warnings)
	}
}

// Records of destroyed sandboxes leave the state a run reads at the run's
// end, for the archive status --all reads, and leave the archive after
// lease.keep_records; lineage stays and serial keeps counting.
func TestTerminalRecordsArePrunedAfterKeepRecords(t *testing.T) {
	h := newHarness(t, twoSandboxes)
	h.mustApply()
	h.writeSpec("[vm]\ndriver = \"sim\"\n[sandboxes.api]\n") // web is no longer declared
	res := h.mustApply()
	if res.recorded.Sandboxes["web"].Phase != state.Destroyed {
		t.Fatalf("web = %+v", res.recorded.Sandboxes["web"])
	}
	lineage, serial := res.recorded.Lineage, res.recorded.Serial
	dir := filepath.Join(h.root, spec.Dir)
	if on, err := state.Read(dir, h.root, ""); err != nil || on.Sandboxes["web"] != nil {
		t.Fatalf("the state a run reads still holds the destroyed record: %v %+v", err, on)
	}
	h.clock.Advance(7*24*time.Hour - time.Minute)
	if res, err := h.reconcile(); err != nil || h.mustPlanState(t).Sandboxes["web"] == nil {
		t.Fatalf("before keep_records: %v, records %v", err, res.recorded.Sandboxes)
	}
	h.clock.Advance(time.Minute)
	res, err := h.reconcile()
	if err != nil {
		t.Fatal(err)
	}
	if _, kept := h.mustPlanState(t).Sandboxes["web"]; kept || res.recorded.Sandboxes["api"] == nil {
		t.Errorf("records after keep_records: %v", res.recorded.Sandboxes)
	}
	if res.recorded.Lineage != lineage || res.recorded.Serial < serial {
		t.Errorf("lineage %s serial %d, before %s %d", res.recorded.Lineage, res.recorded.Serial, lineage, serial)
	}
	if _, ended, err := state.Ended(dir, "web"); err != nil || ended {
		t.Errorf("the archive after keep_records: %v, holds web %v", err, ended)
	}
	if res, err := h.reconcile(); err != nil || !res.Plan.Empty() {
		t.Errorf("after pruning: %v %+v", err, res.Plan)
	}
}
