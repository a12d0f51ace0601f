package reconcile

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/internal/coded"
	"github.com/sandboxforge/sbf/reconcile/plan"
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

// pickyDriver enforces policies, but not this one, and says what would work.
type pickyDriver struct{ drivers.Driver }

func (pickyDriver) EnforceEgress(context.Context, drivers.Spec) error {
	return fmt.Errorf("checking: %w", &drivers.PolicyError{Driver: "picky", Reason: "names need DNS",
		NextSteps: []string{"list addresses"}})
}

// A driver's own next steps come before the engine's, under the same code.
func TestADriversPolicyRefusalKeepsItsNextSteps(t *testing.T) {
	ds := plan.DesiredSandbox{Name: "api", Driver: "picky",
		VM: drivers.Spec{Egress: &drivers.Egress{Mode: "allowlist", Allow: []string{"a.org"}}}}
	e := coded.Of(egressEnforced(context.Background(), drivers.CapabilitiesOf(pickyDriver{}), ds), coded.Unknown)
	steps, _ := e.Details["next_steps"].([]string)
	if e.Code != coded.PolicyUnsupported || !strings.Contains(e.Message, "names need DNS") || len(steps) != 3 ||
		steps[0] != "list addresses" || !strings.Contains(steps[2], "[sandboxes.api.network]") {
		t.Errorf("%s: %s, next steps %q", e.Code, e.Message, steps)
	}
}
