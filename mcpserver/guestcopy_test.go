package mcpserver

import (
	"strings"
	"testing"
	"time"

	"github.com/sandboxforge/sbf/internal/policy"
)

// Guest paths are moved, copied and probed inside one sandbox, and copied
// between two sandboxes of one workspace under the copy ceiling.
func TestGuestMoveCopyExists(t *testing.T) {
	f := newFixture(t, simSpec)
	f.policy = policy.Policy{Ceilings: policy.Ceilings{
		MaxCopyBytes: policy.Ceiling[int64]{Value: 64 << 10, Source: "global config C [policy] max_copy_bytes"},
	}.Defaulted()}
	f.start(Settings{SweepInterval: time.Minute, Session: "local"})
	id := f.ok("create_instance", map[string]any{"workspace_root": f.root})["instance_id"].(string)
	other := f.ok("create_instance", map[string]any{"workspace_root": f.root})["instance_id"].(string)
	f.ok("write_file", map[string]any{"instance_id": id, "path": "/w/a.txt", "content": "A", "make_parents": true})
	f.ok("write_file", map[string]any{"instance_id": id, "path": "/w/d/x.txt", "content": "X", "make_parents": true})
	f.ok("move_path", map[string]any{"instance_id": id, "src": "/w/a.txt", "dst": "/w/b.txt"})
	exists := func(inst, p string) any {
		return f.ok("path_exists", map[string]any{"instance_id": inst, "path": p})["type"]
	}
	if exists(id, "/w/a.txt") != nil || exists(id, "/w/b.txt") != "file" || exists(id, "/w/d") != "directory" {
		t.Fatal("move_path did not move")
	}
	f.fails("move_path", map[string]any{"instance_id": id, "src": "/w/none", "dst": "/w/c"}, "GUEST_PATH_NOT_FOUND")
	taken := f.fails("copy_path", map[string]any{"instance_id": id, "src": "/w/b.txt", "dst": "/w/d"},
		"GUEST_PATH_EXISTS")
	if !strings.Contains(taken["message"].(string), "overwrite") {
		t.Errorf("refusal: %v", taken)
	}
	f.fails("move_path", map[string]any{"instance_id": id, "src": "/", "dst": "/w/root"}, "INVALID_ARGUMENTS")
	f.ok("copy_path", map[string]any{"instance_id": id, "src": "/w/d", "dst": "/w/e/d2", "make_parents": true})
	f.ok("copy_path", map[string]any{"instance_id": id, "src": "/w/b.txt", "dst": "/w/e/d2", "overwrite": true})
	if r := f.ok("read_file", map[string]any{"instance_id": id, "path": "/w/e/d2"}); r["content"] != "A" {
		t.Fatalf("overwritten copy: %v", r)
	}
	// Into another sandbox of the workspace, under a new name.
	c := f.ok("copy_path", map[string]any{"instance_id": id, "src": "/w/d", "dst": "/in/dd",
		"dst_instance_id": other, "make_parents": true})
	if c["archive_bytes"].(float64) <= 0 {
		t.Errorf("copy_path between instances: %v", c)
	}
	if r := f.ok("read_file", map[string]any{"instance_id": other, "path": "/in/dd/x.txt"}); r["content"] != "X" {
		t.Fatalf("copied between instances: %v", r)
	}
	f.fails("copy_path", map[string]any{"instance_id": id, "src": "/w/d", "dst": "/in/dd",
		"dst_instance_id": other}, "GUEST_PATH_EXISTS")
	// Past the ceiling, nothing lands.
	f.ok("run_command", map[string]any{"instance_id": id, "command": "head -c 200000 /dev/urandom > w/big"})
	f.fails("copy_path", map[string]any{"instance_id": id, "src": "/w/big", "dst": "/in/big",
		"dst_instance_id": other}, "COPY_LIMIT_EXCEEDED")
	if l := f.ok("list_files", map[string]any{"instance_id": other, "path": "/in"}); l["count"] != 1.0 {
		t.Fatalf("a refused copy left something: %v", l)
	}
}
