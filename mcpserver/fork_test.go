package mcpserver

import (
	"strings"
	"testing"

	"github.com/sandboxforge/sbf/internal/coded"
)

// fork_instance: children from the instance's state, each an instance of
// its own; the count is bounded as the schema says; the cap refuses a fork
// it cannot hold whole.
func TestForkInstanceTool(t *testing.T) {
	f := newFixture(t, simSpec)
	created := f.ok("create_instance", map[string]any{"workspace_root": f.root, "auto_bootstrap": false})
	id := created["instance_id"].(string)
	f.ok("make_dir", map[string]any{"instance_id": id, "path": "/work"})
	f.ok("write_file", map[string]any{"instance_id": id, "path": "/work/a.txt", "content": "warm"})
	read := func(id string) string {
		return f.ok("read_file", map[string]any{"instance_id": id, "path": "/work/a.txt"})["content"].(string)
	}
	f.fails("fork_instance", map[string]any{"instance_id": id, "count": 0}, coded.InvalidArguments)
	f.fails("fork_instance", map[string]any{"instance_id": id, "count": 9}, coded.InvalidArguments)
	f.fails("fork_instance", map[string]any{"instance_id": id, "count": 3}, coded.InstanceLimit) // 1 + 3 > 3
	out := f.ok("fork_instance", map[string]any{"instance_id": id, "count": 2})
	children, _ := out["children"].([]any)
	if len(children) != 2 || out["count"] != float64(2) || out["source_instance_id"] != id {
		t.Fatalf("fork_instance: %v", out)
	}
	var ids []string
	for _, c := range children {
		cid, _ := c.(map[string]any)["instance_id"].(string)
		if !strings.HasPrefix(cid, "inst_") || cid == id || c.(map[string]any)["expires_at"] == nil {
			t.Fatalf("a child: %v", c)
		}
		ids = append(ids, cid)
	}
	f.ok("write_file", map[string]any{"instance_id": ids[0], "path": "/work/a.txt", "content": "child"})
	if read(id) != "warm" || read(ids[0]) != "child" || read(ids[1]) != "warm" {
		t.Errorf("reads %q %q %q: instances share a disk", read(id), read(ids[0]), read(ids[1]))
	}
	if l := f.ok("list_instances", nil)["instances"].([]any); len(l) != 3 {
		t.Errorf("list_instances: %d instances", len(l))
	}
	f.fails("fork_instance", map[string]any{"instance_id": id}, coded.InstanceLimit)
	hist := f.ok("get_history", map[string]any{"instance_id": ids[1]})
	if !strings.Contains(mustJSON(hist), `"tool":"fork_instance"`) {
		t.Errorf("history: %s", mustJSON(hist))
	}
}
