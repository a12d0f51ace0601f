package mcpserver

import (
	"testing"

	"github.com/sandboxforge/sbf/internal/readcount"
)

// Each request resolves its workspace once and every step of it uses what
// it resolved (create_instance's bootstrap report included), so a call's
// cost does not grow with the steps it takes; a command in a sandbox whose
// files did not change loads no spec. The reads counted are
// internal/readcount's; a count above its bound is a step that read again
// what the request had (the bounds not yet 1 are issue 41's to bring down).
func TestEachRequestResolvesItsWorkspaceOnce(t *testing.T) {
	f := newFixture(t, simSpec+"\n[sandboxes.api]\n")
	eng := f.srv.cfg.Engine
	type bounds map[readcount.Kind]int64
	call := func(tool string, args map[string]any, loads int64, most bounds) map[string]any {
		t.Helper()
		before, loadsBefore := readcount.Now(), eng.Loads()
		out := f.ok(tool, args)
		got := readcount.Now().Since(before)
		if n := eng.Loads() - loadsBefore; n != loads {
			t.Errorf("%s loaded the workspace %d times, want %d", tool, n, loads)
		}
		for k, n := range most {
			if got.Of(k) > n {
				t.Errorf("%s read %s %d times, want at most %d (%v)", tool, k, got.Of(k), n, got)
			}
		}
		return out
	}
	once := bounds{readcount.Resolve: 1, readcount.SpecLoad: 1, readcount.Policy: 1}
	request := bounds{readcount.Resolve: 1, readcount.SpecLoad: 1, readcount.Policy: 1, readcount.SpecMerge: 3,
		readcount.Overrides: 1, readcount.State: 1, readcount.Index: 1, readcount.List: 1, readcount.ListCap: 1,
		readcount.Inspect: 1}
	id := call("create_instance", map[string]any{"workspace_root": f.root}, 1, request)["instance_id"]
	call("run_command", map[string]any{"instance_id": id, "command": "true"}, 1, once) // the first read is cached
	warm := bounds{readcount.Resolve: 1, readcount.SpecLoad: 0, readcount.Overrides: 0, readcount.Policy: 1,
		readcount.State: 0, readcount.Index: 0}
	call("run_command", map[string]any{"instance_id": id, "command": "true"}, 0, warm)
	call("apply", map[string]any{"workspace_root": f.root}, 1, request)
	call("prepare_workspace", map[string]any{"workspace_root": f.root, "instance_id": "api"}, 1, request)
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"list_instances", map[string]any{}}, // one per workspace listed, the backend's report included
		{"plan", map[string]any{"workspace_root": f.root}},
		{"clone_instance", map[string]any{"instance_id": id}},
		{"extend_instance_ttl", map[string]any{"instance_id": id, "ttl_minutes": 30}},
		{"destroy_instance", map[string]any{"instance_id": id}},
	} {
		call(c.tool, c.args, 1, bounds{readcount.SpecLoad: 1})
	}
}
