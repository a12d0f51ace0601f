package mcpserver

import "testing"

// Each request resolves its workspace's files at most once and every step
// of it uses what it resolved (create_instance's bootstrap report
// included), so a call's cost does not grow with the steps it takes; a
// command in a sandbox whose files did not change resolves nothing.
func TestEachRequestResolvesItsWorkspaceOnce(t *testing.T) {
	f := newFixture(t, simSpec+"\n[sandboxes.api]\n")
	eng := f.srv.cfg.Engine
	loads := func(tool string, args map[string]any) (map[string]any, int64) {
		t.Helper()
		before := eng.Loads()
		out := f.ok(tool, args)
		return out, eng.Loads() - before
	}
	out, n := loads("create_instance", map[string]any{"workspace_root": f.root})
	if n != 1 {
		t.Errorf("create_instance resolved the workspace %d times, want 1", n)
	}
	id := out["instance_id"]
	loads("run_command", map[string]any{"instance_id": id, "command": "true"}) // the first read is cached
	for _, call := range []struct {
		tool string
		args map[string]any
		want int64
	}{
		{"run_command", map[string]any{"instance_id": id, "command": "true"}, 0},
		{"apply", map[string]any{"workspace_root": f.root}, 1},
		{"prepare_workspace", map[string]any{"workspace_root": f.root, "instance_id": "api"}, 1},
		{"list_instances", map[string]any{}, 1}, // one per workspace listed, the backend's report included
		{"plan", map[string]any{"workspace_root": f.root}, 1},
		{"clone_instance", map[string]any{"instance_id": id}, 1},
		{"extend_instance_ttl", map[string]any{"instance_id": id, "ttl_minutes": 30}, 1},
		{"destroy_instance", map[string]any{"instance_id": id}, 1},
	} {
		if _, n := loads(call.tool, call.args); n != call.want {
			t.Errorf("%s resolved the workspace %d times, want %d", call.tool, n, call.want)
		}
	}
}
