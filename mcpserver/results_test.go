package mcpserver

import (
	"os"
	"path/filepath"
	"testing"
)

// Every tool, called on the sim, answers what its output schema declares:
// f.call's checkOutput fails a result carrying a field the schema (derived
// from the handler's result type) does not declare, or lacking one it
// requires. The table of calls must reach every registered tool, so a new
// tool is checked the day it is added.
func TestEveryToolAnswersWhatItsSchemaDeclares(t *testing.T) {
	newFakeDocker(t) // the Docker tools talk to a fake docker (docker_fake_test.go), never the host's
	f := newFixture(t, simSpec)
	os.MkdirAll(filepath.Join(f.root, "app"), 0o755)
	os.WriteFile(filepath.Join(f.root, "app", "in.txt"), []byte("in"), 0o644)
	called := map[string]bool{}
	ok := func(name string, args map[string]any) map[string]any {
		t.Helper()
		called[name] = true
		return f.ok(name, args)
	}
	ws := map[string]any{"workspace_root": f.root}
	id := ok("create_instance", map[string]any{"workspace_root": f.root, "auto_bootstrap": false})["instance_id"]
	in := func(args map[string]any) map[string]any {
		out := map[string]any{"instance_id": id}
		for k, v := range args {
			out[k] = v
		}
		return out
	}
	task := ok("start_background_task", in(map[string]any{"command": "echo hi; sleep 1000"}))["task_id"]
	session := ok("start_session", in(map[string]any{"command": "cat"}))["session_id"]
	calls := []struct {
		name string
		args map[string]any
	}{
		{"list_instances", nil}, {"extend_instance_ttl", in(map[string]any{"ttl_minutes": 5})},
		{"validate_workspace_config", ws}, {"plan", ws}, {"apply", ws}, {"get_desired_state", ws},
		{"prepare_workspace", in(nil)}, {"run_command", in(map[string]any{"command": "echo hi"})},
		{"run_ephemeral", map[string]any{"workspace_root": f.root, "command": "echo hi"}},
		{"write_file", in(map[string]any{"path": "d/a.txt", "content": "a", "make_parents": true})},
		{"read_file", in(map[string]any{"path": "d/a.txt"})}, {"list_files", in(map[string]any{"path": "d"})},
		{"stat_path", in(map[string]any{"path": "d/a.txt"})}, {"path_exists", in(map[string]any{"path": "d"})},
		{"make_dir", in(map[string]any{"path": "e"})},
		{"move_path", in(map[string]any{"src": "d/a.txt", "dst": "d/b.txt"})},
		{"copy_path", in(map[string]any{"src": "d/b.txt", "dst": "d/c.txt"})},
		{"remove_path", in(map[string]any{"path": "d/c.txt"})},
		{"copy_to_instance", in(map[string]any{"local_path": "app/in.txt", "remote_path": "in.txt"})},
		{"copy_from_instance", in(map[string]any{"remote_path": "in.txt", "local_path": "out.txt"})},
		{"sync_workspace_to_instance", in(map[string]any{"local_path": "app", "remote_path": "app"})},
		{"sync_instance_to_workspace", in(map[string]any{"remote_path": "app", "local_path": "back"})},
		{"collect_artifacts", in(map[string]any{"remote_paths": []any{"in.txt"}, "local_dest": "arts"})},
		{"get_task_status", map[string]any{"task_id": task}}, {"get_task_logs", map[string]any{"task_id": task}},
		{"get_task_logs", map[string]any{"task_id": task, "cursor": 0}},
		{"stop_task", map[string]any{"task_id": task}},
		{"write_session", map[string]any{"session_id": session, "data": "x"}},
		{"read_session", map[string]any{"session_id": session}},
		{"signal_session", map[string]any{"session_id": session, "signal": "TERM"}},
		{"close_session", map[string]any{"session_id": session}},
		{"docker_build", in(map[string]any{"context_path": ".", "image_tag": "app:dev"})},
		{"docker_run", in(map[string]any{"image": "img"})},
		{"docker_exec", in(map[string]any{"container": "web", "command": "true"})},
		{"docker_logs", in(map[string]any{"container": "web"})},
		{"docker_compose", in(map[string]any{"project_dir": "app", "action": "ps"})},
		{"docker_ps", in(nil)}, {"docker_images", in(nil)}, {"docker_cleanup", in(nil)},
		{"validate_image", in(map[string]any{"image_name": "app:dev"})},
		{"snapshot_instance", in(map[string]any{"name": "s1"})}, {"list_snapshots", in(nil)},
		{"restore_snapshot", in(map[string]any{"name": "s1"})},
		{"export_snapshot", in(map[string]any{"name": "s1", "local_path": "s1.snap"})},
		{"import_snapshot", in(map[string]any{"name": "s2", "local_path": "s1.snap"})},
		{"delete_snapshot", in(map[string]any{"name": "s2"})},
		{"clone_instance", in(nil)}, {"fork_instance", in(nil)},
		{"expose_port", in(map[string]any{"port": guestHTTP(t, "x")})}, {"list_exposed_ports", nil},
		{"get_instance_stats", in(nil)}, {"health", nil}, {"get_history", in(nil)}, {"enable_toolset", nil},
	}
	for _, c := range calls {
		ok(c.name, c.args)
	}
	port := ok("list_exposed_ports", nil)["ports"].([]any)[0].(map[string]any)["port"]
	ok("unexpose_port", in(map[string]any{"port": port}))
	// The sim enforces no network policy: get_egress_log refuses there
	// (POLICY_UNSUPPORTED), so its result is checked where a backend
	// keeps a log (egresslog_test.go).
	f.fails("get_egress_log", in(nil), "POLICY_UNSUPPORTED")
	called["get_egress_log"] = true
	ok("destroy_instance", in(nil))
	for name := range f.srv.listing.defs {
		if !called[name] {
			t.Errorf("%s is not called here: add a call", name)
		}
	}
}
