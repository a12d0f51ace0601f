package external

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/sandboxforge/sbf/drivers"
)

// enforcingPlugin enforces deny and refuses anything else, as a plugin's EnforceEgress may.
type enforcingPlugin struct{ *simPlugin }

func (p enforcingPlugin) EnforceEgress(_ context.Context, s drivers.Spec) error {
	if s.Egress == nil || s.Egress.Mode == "deny" {
		return nil
	}
	return fmt.Errorf("checking the policy: %w", &drivers.PolicyError{Driver: "sim", Reason: "names need DNS",
		NextSteps: []string{"list addresses"}})
}

// The plugin's answer crosses the pipe with its kind and next steps; a plugin that does not
// enforce policies refuses them all.
func TestEnforceEgressCrossesTheWire(t *testing.T) {
	d := overPipes(t, enforcingPlugin{newSimPlugin(t)}, "")
	deny := drivers.Spec{Name: "x", Egress: &drivers.Egress{Mode: "deny"}}
	if err := d.EnforceEgress(context.Background(), deny); err != nil {
		t.Errorf("deny: %v", err)
	}
	names := drivers.Spec{Name: "x", Egress: &drivers.Egress{Mode: "allowlist", Allow: []string{"a.org"}}}
	err := d.EnforceEgress(context.Background(), names)
	var pe *drivers.PolicyError
	if !errors.As(err, &pe) || pe.Reason != "names need DNS" || len(pe.NextSteps) != 1 ||
		!strings.Contains(err.Error(), "checking the policy") {
		t.Errorf("allowlist: %v (%+v)", err, pe)
	}

	plain := overPipes(t, newSimPlugin(t), "")
	ctx := context.Background()
	if err := plain.EnforceEgress(ctx, deny); err == nil || !strings.Contains(err.Error(), "cannot enforce") {
		t.Errorf("a plugin without EnforceEgress: %v; want a refusal", err)
	}
}
