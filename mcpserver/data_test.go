package mcpserver

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// An agent can work inside what it created: commands (a non-zero exit is a
// result), copies both ways, sync, artifacts; host paths stay inside the
// workspace.
func TestDataPlaneOnTheSim(t *testing.T) {
	f := newFixture(t, "[vm]\ndriver = \"sim\"\n")
	id := f.ok("create_instance", map[string]any{"workspace_root": f.root})["instance_id"].(string)
	out := f.ok("run_command", map[string]any{"instance_id": id, "command": "echo hi $GREETING; pwd; exit 42",
		"env": map[string]any{"GREETING": "there"}})
	if out["exit_code"].(float64) != 42 || !strings.HasPrefix(out["stdout"].(string), "hi there\n") {
		t.Fatalf("run_command: %v", out)
	}
	os.MkdirAll(filepath.Join(f.root, "app", ".venv"), 0o755)
	os.WriteFile(filepath.Join(f.root, "app", "main.txt"), []byte("v1"), 0o644)
	os.WriteFile(filepath.Join(f.root, "app", ".venv", "x"), []byte("x"), 0o644)
	f.ok("copy_to_instance", map[string]any{"instance_id": id, "local_path": "app/main.txt", "remote_path": "/work/one.txt"})
	if got := f.ok("run_command", map[string]any{"instance_id": id, "command": "cat work/one.txt"})["stdout"]; got != "v1" {
		t.Errorf("copied file reads %q", got)
	}
	sync := f.ok("sync_workspace_to_instance", map[string]any{"instance_id": id, "local_path": "app", "remote_path": "/work/app"})
	if sync["files_sent"].(float64) != 1 {
		t.Errorf("sync (the .venv left out): %v", sync)
	}
	f.ok("run_command", map[string]any{"instance_id": id, "command": "mkdir -p out && echo result > out/r.txt"})
	arts := f.ok("collect_artifacts", map[string]any{"instance_id": id, "remote_paths": []any{"/out/r.txt"}, "local_dest": "artifacts"})
	if b, _ := os.ReadFile(filepath.Join(f.root, "artifacts", "r.txt")); string(b) != "result\n" {
		t.Errorf("collected %v, file %q", arts, b)
	}
	f.ok("copy_from_instance", map[string]any{"instance_id": id, "remote_path": "/work/app", "local_path": "back"})
	if b, _ := os.ReadFile(filepath.Join(f.root, "back", "main.txt")); string(b) != "v1" {
		t.Errorf("copied back: %q", b)
	}
	outside := t.TempDir()
	for _, args := range []map[string]any{
		{"instance_id": id, "local_path": outside, "remote_path": "/x"},
		{"instance_id": id, "local_path": "../../etc/passwd", "remote_path": "/x"},
	} {
		f.fails("copy_to_instance", args, "HOST_PATH_DENIED")
	}
	f.fails("copy_from_instance", map[string]any{"instance_id": id, "remote_path": "/work/app", "local_path": filepath.Join(outside, "x")}, "HOST_PATH_DENIED")
	f.fails("collect_artifacts", map[string]any{"instance_id": id, "remote_paths": []any{}, "local_dest": "a"}, "INVALID_ARGUMENTS")
	f.ok("destroy_instance", map[string]any{"instance_id": id})
	f.fails("run_command", map[string]any{"instance_id": id, "command": "true"}, "INSTANCE_TERMINAL")
}
