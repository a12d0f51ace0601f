package mcpserver

import (
	"path/filepath"
	"strings"

	"github.com/sandboxforge/sbf/sandbox"
)

// The tools of issue 24 in the tests every tool takes part in.

func init() {
	for name, h := range map[string]hints{
		"read_file": readOnly, "list_files": readOnly, "stat_path": readOnly,
		"write_file": {destructive: true, idempotent: true}, "remove_path": {destructive: true, idempotent: true},
		"make_dir":    {idempotent: true},
		"expose_port": {idempotent: true}, "unexpose_port": {destructive: true, idempotent: true},
		"list_exposed_ports": readOnly, "get_history": readOnly, "get_instance_stats": readOnly, "health": readOnly,
		"get_egress_log":    readOnly,
		"snapshot_instance": {}, "list_snapshots": readOnly,
		"restore_snapshot": {destructive: true, idempotent: true}, "delete_snapshot": {destructive: true, idempotent: true},
		"clone_instance": {openWorld: true}, "export_snapshot": {}, "import_snapshot": {},
		"fork_instance": {openWorld: true},
	} {
		wantHints[name] = h
	}
}

// agentReadOnlyArgs are arguments for the read-only tools of issue 24,
// which TestReadOnlyToolsChangeNothing calls on a running instance.
func agentReadOnlyArgs(id, task string) map[string]map[string]any {
	log := ".sbf/tasks/" + task + ".log" // the task's output, relative to the guest's home
	return map[string]map[string]any{
		"read_file":          {"instance_id": id, "path": log},
		"list_files":         {"instance_id": id, "path": "/", "recursive": true},
		"stat_path":          {"instance_id": id, "path": log},
		"list_exposed_ports": {},
		"get_history":        {"instance_id": id},
		"get_instance_stats": {"instance_id": id},
		"health":             {},
		"get_egress_log":     {"instance_id": id},
		"list_snapshots":     {"instance_id": id},
	}
}

// agentCanaryCalls calls each tool of issue 24 for
// TestNoToolOutputCarriesASecret.
func agentCanaryCalls(check func(string, map[string]any) map[string]any, id string) {
	check("write_file", map[string]any{"instance_id": id, "path": "/w/f.txt", "content": "x"})
	check("read_file", map[string]any{"instance_id": id, "path": "/w/f.txt"})
	check("list_files", map[string]any{"instance_id": id, "path": "/", "recursive": true})
	check("stat_path", map[string]any{"instance_id": id, "path": "/w/f.txt"})
	check("make_dir", map[string]any{"instance_id": id, "path": "/w/d"})
	check("remove_path", map[string]any{"instance_id": id, "path": "/w/d"})
	check("expose_port", map[string]any{"instance_id": id, "port": 1, "host_port": 2})
	check("list_exposed_ports", map[string]any{"instance_id": id})
	check("unexpose_port", map[string]any{"instance_id": id, "port": 1})
	check("get_history", map[string]any{"instance_id": id})
	check("get_instance_stats", map[string]any{"instance_id": id})
	check("health", map[string]any{})
	check("get_egress_log", map[string]any{"instance_id": id})
	check("snapshot_instance", map[string]any{"instance_id": id, "name": "s1"})
	check("list_snapshots", map[string]any{"instance_id": id})
	check("restore_snapshot", map[string]any{"instance_id": id, "name": "s1"})
	check("export_snapshot", map[string]any{"instance_id": id, "name": "s1", "local_path": "s1.snap"})
	check("import_snapshot", map[string]any{"instance_id": id, "name": "s2", "local_path": "s1.snap"})
	check("delete_snapshot", map[string]any{"instance_id": id, "name": "s1"})
	check("clone_instance", map[string]any{"instance_id": id})
	check("fork_instance", map[string]any{"instance_id": id})
}

// historyFile reports whether path is the history or its lock: the
// bookkeeping every call writes.
func historyFile(path string) bool {
	return strings.HasPrefix(filepath.Base(path), sandbox.HistoryFile)
}
