package mcpserver

import (
	"strings"
	"testing"
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
		{"create_instance", map[string]any{"workspace_root": f.root, "colour": "red"}, "colour"},
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
