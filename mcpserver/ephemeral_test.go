package mcpserver

import "testing"

// run_ephemeral makes a sandbox, runs the command and destroys the
// sandbox in one call, taking a warm spare of its shape when the pool has
// one; a failing command is a result, and nothing is left either way.
func TestRunEphemeralLeavesNothing(t *testing.T) {
	f := pooledFixture(t)
	spares := len(f.world())
	cold := f.ok("run_ephemeral", map[string]any{"workspace_root": f.root, "command": "echo cold; exit 3"})
	if cold["stdout"] != "cold\n" || cold["exit_code"] != 3.0 || cold["destroyed"] != true ||
		cold["warm_spare"] != false {
		t.Errorf("cold run_ephemeral: %v", cold)
	}
	warm := f.ok("run_ephemeral", map[string]any{"workspace_root": f.root, "command": "echo warm", "cpus": 2})
	if warm["stdout"] != "warm\n" || warm["destroyed"] != true || warm["warm_spare"] != true {
		t.Errorf("warm run_ephemeral: %v", warm)
	}
	if got := len(f.world()); got != spares-1 {
		t.Errorf("%d VMs left, want the %d spares less the one taken: %v", got, spares, f.world())
	}
	if list := f.ok("list_instances", map[string]any{})["instances"].([]any); len(list) != 0 {
		t.Errorf("instances left: %v", list)
	}
	if _, isErr := f.call("run_ephemeral", map[string]any{"workspace_root": f.root, "command": " "}); !isErr {
		t.Error("an empty command was run")
	}
}
