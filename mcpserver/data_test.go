package mcpserver

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
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
	f.ok("copy_to_instance", map[string]any{"instance_id": id, "local_path": "app/main.txt",
		"remote_path": "/work/one.txt"})
	if got := f.ok("run_command", map[string]any{"instance_id": id,
		"command": "cat work/one.txt"})["stdout"]; got != "v1" {
		t.Errorf("copied file reads %q", got)
	}
	sync := f.ok("sync_workspace_to_instance", map[string]any{"instance_id": id, "local_path": "app",
		"remote_path": "/work/app"})
	if sync["files_sent"].(float64) != 1 {
		t.Errorf("sync (the .venv left out): %v", sync)
	}
	f.ok("run_command", map[string]any{"instance_id": id, "command": "mkdir -p out && echo result > out/r.txt"})
	arts := f.ok("collect_artifacts", map[string]any{"instance_id": id, "remote_paths": []any{"/out/r.txt"},
		"local_dest": "artifacts"})
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
	f.fails("copy_from_instance", map[string]any{"instance_id": id, "remote_path": "/work/app",
		"local_path": filepath.Join(outside, "x")}, "HOST_PATH_DENIED")
	// v1's code for an empty list (after the lease checks), not INVALID_ARGUMENTS
	f.fails("collect_artifacts", map[string]any{"instance_id": id, "remote_paths": []any{}, "local_dest": "a"},
		"BACKEND_COMMAND_FAILED")
	f.ok("destroy_instance", map[string]any{"instance_id": id})
	f.fails("run_command", map[string]any{"instance_id": id, "command": "true"}, "INSTANCE_TERMINAL")
}

// A background task outlives the server that started it: a restarted
// server reports, reads and stops it.
func TestBackgroundTaskSurvivesARestart(t *testing.T) {
	f := newFixture(t, "[vm]\ndriver = \"sim\"\n")
	id := f.ok("create_instance", map[string]any{"workspace_root": f.root})["instance_id"].(string)
	started := f.ok("start_background_task", map[string]any{"instance_id": id, "command": "echo started; sleep 60"})
	task := started["task_id"].(string)
	if started["status"] != "running" || started["pid"].(float64) <= 0 {
		t.Fatalf("start: %v", started)
	}
	f.start(Settings{SweepInterval: time.Minute, Session: "local"}) // a new server over the same host state
	if st := f.ok("get_task_status", map[string]any{"task_id": task}); st["status"] != "running" ||
		st["instance_id"] != id {
		t.Errorf("status after restart: %v", st)
	}
	var logs map[string]any
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if logs = f.ok("get_task_logs", map[string]any{"task_id": task}); logs["logs"] == "started\n" {
			break
		}
	}
	if logs["logs"] != "started\n" {
		t.Errorf("logs: %v", logs)
	}
	if st := f.ok("stop_task", map[string]any{"task_id": task}); st["status"] != "stopped" ||
		st["exit_code"].(float64) != -15 {
		t.Errorf("stop: %v", st)
	}
	f.fails("stop_task", map[string]any{"task_id": task}, "TASK_ALREADY_FINISHED")
	f.fails("get_task_status", map[string]any{"task_id": "task_000000000000"}, "TASK_NOT_FOUND")
}

// A task whose cwd does not exist starts, as in v1, and fails with cd's
// status, its message in the log; an empty collect_artifacts is v1's
// BACKEND_COMMAND_FAILED.
func TestTaskCwdAndEmptyArtifactsAsV1(t *testing.T) {
	f := newFixture(t, simSpec)
	id := f.ok("create_instance", map[string]any{"workspace_root": f.root})["instance_id"].(string)
	started := f.ok("start_background_task", map[string]any{"instance_id": id, "command": "echo never",
		"cwd": "/no/such/folder"})
	if started["status"] != "running" {
		t.Fatalf("start: %v", started)
	}
	task := started["task_id"].(string)
	var st map[string]any
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if st = f.ok("get_task_status", map[string]any{"task_id": task}); st["status"] != "running" {
			break
		}
	}
	if st["status"] != "failed" || st["exit_code"] == nil || st["exit_code"].(float64) == 0 {
		t.Errorf("status: %v", st)
	}
	if logs := f.ok("get_task_logs", map[string]any{"task_id": task}); !strings.Contains(logs["logs"].(string),
		"/no/such/folder") || strings.Contains(logs["logs"].(string), "never") {
		t.Errorf("logs: %v", logs)
	}
	empty := f.fails("collect_artifacts", map[string]any{"instance_id": id, "remote_paths": []any{},
		"local_dest": "a"}, "BACKEND_COMMAND_FAILED")
	if empty["message"] != "remote_paths cannot be empty" {
		t.Errorf("empty collect: %v", empty)
	}
}
