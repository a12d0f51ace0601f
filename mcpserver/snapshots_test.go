package mcpserver

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sandboxforge/sbf/internal/coded"
	"github.com/sandboxforge/sbf/internal/hostpath"
)

// snapshot → change a file → restore → the file is back; a clone is an
// instance of its own; every refusal is coded.
func TestSnapshotAndCloneTools(t *testing.T) {
	f := newFixture(t, simSpec)
	created := f.ok("create_instance", map[string]any{"workspace_root": f.root, "auto_bootstrap": false})
	id := created["instance_id"].(string)
	write := func(id, content string) {
		f.ok("write_file", map[string]any{"instance_id": id, "path": "/work/a.txt", "content": content})
	}
	read := func(id string) string {
		return f.ok("read_file", map[string]any{"instance_id": id, "path": "/work/a.txt"})["content"].(string)
	}
	f.ok("make_dir", map[string]any{"instance_id": id, "path": "/work"})
	write(id, "before")
	snap := f.ok("snapshot_instance", map[string]any{"instance_id": id, "name": "clean"})
	if snap["status"] != "created" || snap["name"] != "clean" || snap["created_at"] == nil || snap["backend"] != "sim" {
		t.Errorf("snapshot_instance: %v", snap)
	}
	write(id, "after")
	f.ok("restore_snapshot", map[string]any{"instance_id": id, "name": "clean"})
	if got := read(id); got != "before" {
		t.Errorf("after restore_snapshot: %q", got)
	}
	list := f.ok("list_snapshots", map[string]any{"instance_id": id})
	if list["count"] != float64(1) {
		t.Errorf("list_snapshots: %v", list)
	}
	f.fails("snapshot_instance", map[string]any{"instance_id": id, "name": "clean"}, coded.SnapshotExists)
	f.fails("snapshot_instance", map[string]any{"instance_id": id, "name": "../../etc"}, coded.InvalidArguments)
	f.fails("restore_snapshot", map[string]any{"instance_id": id, "name": "nope"}, coded.SnapshotNotFound)
	f.fails("snapshot_instance", map[string]any{"instance_id": "inst_00000000", "name": "x"}, coded.InstanceNotFound)

	clone := f.ok("clone_instance", map[string]any{"instance_id": id, "ttl_minutes": 15})
	cid, _ := clone["instance_id"].(string)
	if !strings.HasPrefix(cid, "inst_") || cid == id || clone["source_instance_id"] != id || clone["status"] != "running" {
		t.Fatalf("clone_instance: %v", clone)
	}
	if got := read(cid); got != "before" {
		t.Errorf("the clone reads %q", got)
	}
	write(cid, "clone")
	if read(id) != "before" || read(cid) != "clone" {
		t.Error("an instance and its clone share a disk")
	}
	if l := f.ok("list_instances", nil)["instances"].([]any); len(l) != 2 {
		t.Errorf("list_instances: %d instances", len(l))
	}
	named := f.ok("clone_instance", map[string]any{"instance_id": id, "name": "inst_feedbeef", "snapshot": "clean"})
	if named["instance_id"] != "inst_feedbeef" {
		t.Errorf("a named clone: %v", named)
	}
	f.fails("clone_instance", map[string]any{"instance_id": id, "name": "a/b"}, coded.ConfigInvalid)
	f.ok("delete_snapshot", map[string]any{"instance_id": id, "name": "clean"})
	f.fails("delete_snapshot", map[string]any{"instance_id": id, "name": "clean"}, coded.SnapshotNotFound)
	f.ok("destroy_instance", map[string]any{"instance_id": id})
	if got := read(cid); got != "clone" {
		t.Errorf("the clone after its source was destroyed: %q", got)
	}
	hist := f.ok("get_history", map[string]any{"instance_id": id})
	if !strings.Contains(mustJSON(hist), `"detail":"name=clean"`) {
		t.Errorf("history: %s", mustJSON(hist))
	}
}

// export_snapshot → import_snapshot into another instance → restore: the
// file is back; host paths follow the copy tools' rules.
func TestExportAndImportSnapshotTools(t *testing.T) {
	f := newFixture(t, simSpec)
	ids := []string{}
	for range 2 {
		created := f.ok("create_instance", map[string]any{"workspace_root": f.root, "auto_bootstrap": false})
		id := created["instance_id"].(string)
		f.ok("make_dir", map[string]any{"instance_id": id, "path": "/work"})
		ids = append(ids, id)
	}
	a, b := ids[0], ids[1]
	f.ok("write_file", map[string]any{"instance_id": a, "path": "/work/a.txt", "content": "exported"})
	f.ok("write_file", map[string]any{"instance_id": b, "path": "/work/a.txt", "content": "b's own"})
	f.ok("snapshot_instance", map[string]any{"instance_id": a, "name": "clean"})
	out := f.ok("export_snapshot", map[string]any{"instance_id": a, "name": "clean", "local_path": "snaps/clean.snap"})
	if out["status"] != "exported" || out["local_path"] != filepath.Join(f.root, "snaps", "clean.snap") {
		t.Errorf("export_snapshot: %v", out)
	}
	f.fails("export_snapshot", map[string]any{"instance_id": a, "name": "clean", "local_path": "snaps/clean.snap"},
		hostpath.Denied)
	f.fails("export_snapshot", map[string]any{"instance_id": a, "name": "clean", "local_path": "/tmp/out.snap"},
		hostpath.Denied)
	f.fails("export_snapshot", map[string]any{"instance_id": a, "name": "clean",
		"local_path": ".sandboxforge.local.toml"}, hostpath.Denied)
	in := f.ok("import_snapshot", map[string]any{"instance_id": b, "name": "moved", "local_path": "snaps/clean.snap"})
	if in["status"] != "imported" || in["name"] != "moved" || in["instance_id"] != b {
		t.Errorf("import_snapshot: %v", in)
	}
	f.fails("import_snapshot", map[string]any{"instance_id": b, "name": "moved", "local_path": "snaps/clean.snap"},
		coded.SnapshotExists)
	f.fails("import_snapshot", map[string]any{"instance_id": b, "name": "x", "local_path": "/etc/passwd"},
		hostpath.Denied)
	f.ok("restore_snapshot", map[string]any{"instance_id": b, "name": "moved"})
	got := f.ok("read_file", map[string]any{"instance_id": b, "path": "/work/a.txt"})["content"]
	if got != "exported" {
		t.Errorf("b after restoring the import: %v", got)
	}
	f.ok("destroy_instance", map[string]any{"instance_id": a})
	if _, err := os.Stat(filepath.Join(f.root, "snaps", "clean.snap")); err != nil {
		t.Errorf("the export went with its instance: %v", err)
	}
}
