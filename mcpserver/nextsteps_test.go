package mcpserver

import (
	"fmt"
	"strings"
	"testing"
)

// nextStepsOf are an error's next calls, joined.
func nextStepsOf(t *testing.T, out map[string]any) string {
	t.Helper()
	steps, _ := out["details"].(map[string]any)["next_steps"].([]any)
	if len(steps) == 0 {
		t.Fatalf("no next_steps: %v", out)
	}
	return fmt.Sprint(steps...)
}

// An agent told an instance is unknown or ended is told which call to
// make next, with the argument it takes (issue 42.3).
func TestInstanceErrorsNameTheNextCall(t *testing.T) {
	f := newFixture(t, simSpec)
	missing := f.fails("run_command", map[string]any{"instance_id": "inst_nope", "command": "true"}, "INSTANCE_NOT_FOUND")
	if steps := nextStepsOf(t, missing); !strings.Contains(steps, "call list_instances") ||
		!strings.Contains(steps, "call create_instance with workspace_root") {
		t.Errorf("INSTANCE_NOT_FOUND next_steps: %s", steps)
	}
	id := f.ok("create_instance", map[string]any{"workspace_root": f.root, "auto_bootstrap": false})["instance_id"]
	f.ok("destroy_instance", map[string]any{"instance_id": id})
	for _, tool := range []string{"run_command", "extend_instance_ttl"} {
		ended := f.fails(tool, map[string]any{"instance_id": id, "command": "true", "ttl_minutes": 5},
			"INSTANCE_TERMINAL")
		if steps := nextStepsOf(t, ended); !strings.Contains(steps, "call create_instance with workspace_root") ||
			!strings.Contains(steps, "call list_instances with include_expired: true") {
			t.Errorf("%s: INSTANCE_TERMINAL next_steps: %s", tool, steps)
		}
	}
}

// A relative workspace_root says it must be absolute (it named the
// server's working folder, not the client's), and a call refused before
// anything was made names no instance.
func TestRefusalsSayWhatToChange(t *testing.T) {
	f := newFixture(t, simSpec)
	t.Chdir(f.root)
	for _, tool := range []string{"create_instance", "validate_workspace_config", "run_ephemeral"} {
		out := f.fails(tool, map[string]any{"workspace_root": ".", "command": "true"}, "WORKSPACE_CONFIG_INVALID")
		if msg, _ := out["message"].(string); !strings.Contains(msg, "workspace_root must be absolute: .") {
			t.Errorf("%s with a relative workspace_root: %v", tool, out)
		}
	}
	ttl := f.fails("create_instance", map[string]any{"workspace_root": f.root, "ttl_minutes": 10_000}, "TTL_INVALID")
	if d := ttl["details"].(map[string]any); d["instance_id"] != nil || d["max_ttl_minutes"] != 120.0 {
		t.Errorf("create_instance: TTL_INVALID details = %v", d)
	}
	if rows := f.ok("list_instances", map[string]any{"include_expired": true})["instances"].([]any); len(rows) != 0 {
		t.Errorf("refused calls left instances: %v", rows)
	}
	// An instance that exists is still named.
	id := f.ok("create_instance", map[string]any{"workspace_root": f.root, "auto_bootstrap": false})["instance_id"]
	ttl = f.fails("extend_instance_ttl", map[string]any{"instance_id": id, "ttl_minutes": 10_000}, "TTL_INVALID")
	if d := ttl["details"].(map[string]any); d["instance_id"] != id {
		t.Errorf("extend_instance_ttl: TTL_INVALID details = %v", d)
	}
}
