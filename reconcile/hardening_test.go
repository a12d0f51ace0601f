package reconcile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

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
	if _, err := h.converge(Options{Edit: ExtendEdit("api", time.Hour)}); err == nil {
		t.Error("an extension past max_lifetime was accepted on top of the edited end")
	}
	h.clock.Advance(time.Hour)
	res, err := h.reconcile()
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Plan.Actions) != 2 || res.Plan.Actions[0].Kind != Expire {
		t.Fatalf("at acquisition + 24h: plan = %+v", res.Plan.Actions)
	}
	if res.State.Sandboxes["api"].Phase != state.Expired || len(h.world()) != 0 {
		t.Errorf("api = %+v, world = %v", res.State.Sandboxes["api"], h.world())
	}
	if len(res.Resolved.Warnings) != 2 {
		t.Errorf("warnings = %v, want one per edited lease", res.Resolved.Warnings)
	}
}
