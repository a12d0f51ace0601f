package reconcile

import (
	"strings"
	"testing"

	"github.com/sandboxforge/sbf/internal/coded"
)

// The sim runs guest commands on the host: it can enforce no network
// policy, so a sandbox that asks for one is refused, never run open.
func TestAPolicyTheDriverCannotEnforceIsRefused(t *testing.T) {
	h := newHarness(t, "[vm]\ndriver = \"sim\"\n[sandboxes.api]\n[sandboxes.open]\n"+
		"[sandboxes.api.network]\negress = \"deny\"\n")
	_, err := h.apply()
	e := coded.Of(err, coded.Unknown)
	if e.Code != coded.PolicyUnsupported || !strings.Contains(e.Message, "sim driver cannot enforce") {
		t.Fatalf("apply = %v (%s), want POLICY_UNSUPPORTED", err, e.Code)
	}
	if steps, _ := e.Details["next_steps"].([]string); len(steps) != 2 {
		t.Errorf("details = %v, want next steps", e.Details)
	}
	world := h.world()
	if _, ok := world[h.instance("api")]; ok {
		t.Error("the sandbox whose policy cannot be enforced was created")
	}
	if _, ok := world[h.instance("open")]; !ok {
		t.Error("the sandbox without a policy was held back")
	}
}
