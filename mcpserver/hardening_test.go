package mcpserver

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sandboxforge/sbf/spec"
)

// Wrong arguments come back in the v1 envelope, naming the field, never
// as Go's text for the validator's structs.
func TestArgumentErrorsUseTheEnvelope(t *testing.T) {
	f := newFixture(t, simSpec)
	for _, tc := range []struct {
		tool  string
		args  map[string]any
		field string
	}{
		{"create_instance", map[string]any{"workspace_root": f.root, "ttl_minutes": "ten"}, "ttl_minutes"},
		{"create_instance", map[string]any{"workspace_root": f.root, "colour": "red", "cpus": "two"}, "cpus"},
		{"extend_instance_ttl", map[string]any{"instance_id": "inst_00000000"}, "ttl_minutes"},
		{"plan", map[string]any{"targets": "api"}, "targets"},
		{"validate_workspace_config", map[string]any{"workspace_root": 7}, "workspace_root"},
	} {
		out := f.fails(tc.tool, tc.args, "INVALID_ARGUMENTS")
		details := out["details"].(map[string]any)
		msg := out["message"].(string)
		if details["field"] != tc.field || !strings.Contains(msg, tc.field) || strings.Contains(msg, "&{") {
			t.Errorf("%s %v: %v", tc.tool, tc.args, out)
		}
	}
	if len(f.world()) != 0 {
		t.Errorf("a call with bad arguments changed the world: %v", f.world())
	}
}

// A lease end hand-edited past the policy is clamped when a tool loads
// the workspace, and the tools say so.
func TestToolsReportClampedLeases(t *testing.T) {
	f := newFixture(t, simSpec+"[sandboxes.api]\n")
	writeManaged(t, f.root, "[leases.api]\nacquired_at = 2026-11-25T11:00:00Z\nexpires_at = 2099-01-01T00:00:00Z\n")
	out := f.ok("get_desired_state", map[string]any{"workspace_root": f.root})
	lease := out["managed_overrides"].(map[string]any)["leases"].(map[string]any)["api"].(map[string]any)
	warnings := out["warnings"].([]any)
	if lease["expires_at"] != "2026-11-26T11:00:00Z" || len(warnings) != 1 ||
		!strings.Contains(warnings[0].(string), "max_lifetime") {
		t.Errorf("lease %v, warnings %v", lease, warnings)
	}
	diag := f.ok("validate_workspace_config", map[string]any{"workspace_root": f.root})["diagnostics"].([]any)
	if len(diag) != 1 {
		t.Errorf("diagnostics = %v", diag)
	}
}

func writeManaged(t *testing.T, root, text string) {
	t.Helper()
	dir := filepath.Join(root, spec.Dir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, spec.OverridesFile), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}
