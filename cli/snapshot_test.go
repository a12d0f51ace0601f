package cli

import (
	"encoding/json"
	"strings"
	"testing"
)

// sbf snapshot create|list|restore|delete and sbf clone, on the sim: a
// snapshot brings a file back, a clone runs apart from its source, and
// every refusal is the engine's, coded.
func TestSnapshotAndCloneCommands(t *testing.T) {
	w := applied(t)
	w.must("exec", "api", "--", "sh", "-c", "echo before > a.txt")
	if r := w.run(nil, "snapshot", "create", "api", "clean"); r.code != 0 ||
		!strings.Contains(r.stdout, "Snapshot clean of sandbox api taken.") {
		t.Fatalf("create: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	w.must("exec", "api", "--", "sh", "-c", "echo after > a.txt")
	w.must("snapshot", "restore", "api", "clean")
	if r := w.run(nil, "exec", "api", "--", "cat", "a.txt"); r.stdout != "before\n" {
		t.Errorf("after restore: %q", r.stdout)
	}
	r := w.run(nil, "snapshot", "list", "api", "--json")
	var list struct {
		Sandbox   string
		Snapshots []struct {
			Name      string `json:"name"`
			CreatedAt string `json:"created_at"`
		}
	}
	if err := json.Unmarshal([]byte(r.stdout), &list); err != nil || len(list.Snapshots) != 1 ||
		list.Snapshots[0].Name != "clean" || list.Snapshots[0].CreatedAt == "" {
		t.Errorf("list --json: %v\n%s%s", err, r.stdout, r.stderr)
	}
	if r := w.run(nil, "snapshot", "create", "api", "../x", "--json"); r.code != 1 ||
		!strings.Contains(r.stdout, `"error_code": "INVALID_ARGUMENTS"`) {
		t.Errorf("a path for a name: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = w.run(nil, "snapshot", "restore", "api", "nope")
	if r.code == 0 || !strings.Contains(r.stderr, "no snapshot nope") {
		t.Errorf("restore of a missing snapshot: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := w.run(nil, "clone", "api", "--json"); r.code != 0 || !strings.Contains(r.stdout, `"sandbox": "api-clone-1"`) {
		t.Fatalf("clone: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	w.must("exec", "api-clone-1", "--", "sh", "-c", "echo clone > a.txt")
	if r := w.run(nil, "exec", "api", "--", "cat", "a.txt"); r.stdout != "before\n" {
		t.Errorf("the source after its clone wrote: %q", r.stdout)
	}
	if r := w.run(nil, "clone", "api", "copy", "--snapshot", "clean"); r.code != 1 ||
		!strings.Contains(r.stderr, "INSTANCE_LIMIT_EXCEEDED") && !strings.Contains(r.stderr, "instance limit reached") {
		t.Errorf("a clone past [lease] max_instances (3): %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	w.must("destroy", "web", "--auto-approve")
	if r := w.run(nil, "clone", "api", "copy", "--snapshot", "clean"); r.code != 0 ||
		!strings.Contains(r.stdout, "Sandbox copy is a clone of api.") {
		t.Errorf("clone --snapshot: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := w.run(nil, "snapshot", "list", "copy"); !strings.Contains(r.stdout, "Sandbox copy has no snapshots.") {
		t.Errorf("the copy's snapshots: %s%s", r.stdout, r.stderr)
	}
	w.must("snapshot", "delete", "api", "clean")
	w.must("destroy", "api", "--auto-approve")
	if r := w.run(nil, "exec", "api-clone-1", "--", "cat", "a.txt"); r.stdout != "clone\n" {
		t.Errorf("the clone after its source went: %q %s", r.stdout, r.stderr)
	}
	if r := w.run(nil, "history", "api", "--json"); !strings.Contains(r.stdout, `"snapshot create"`) {
		t.Errorf("history: %s", r.stdout)
	}
}

// sbf snapshot export and import: a file in the workspace carries a
// snapshot to another sandbox; an existing file is never overwritten.
func TestSnapshotExportImportCommands(t *testing.T) {
	w := applied(t)
	w.must("exec", "api", "--", "sh", "-c", "echo exported > a.txt")
	w.must("snapshot", "create", "api", "clean")
	if r := w.run(nil, "snapshot", "export", "api", "clean", "out/clean.snap"); r.code != 0 ||
		!strings.Contains(r.stdout, "Snapshot clean of sandbox api exported to ") {
		t.Fatalf("export: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := w.run(nil, "snapshot", "export", "api", "clean", "out/clean.snap", "--json"); r.code != 1 ||
		!strings.Contains(r.stdout, `"error_code": "HOST_PATH_DENIED"`) {
		t.Errorf("export over an existing file: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r := w.run(nil, "snapshot", "import", "web", "moved", "out/clean.snap", "--json")
	if r.code != 0 || !strings.Contains(r.stdout, `"action": "import"`) || !strings.Contains(r.stdout, "clean.snap") {
		t.Fatalf("import: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	w.must("snapshot", "restore", "web", "moved")
	if r := w.run(nil, "exec", "web", "--", "cat", "a.txt"); r.stdout != "exported\n" {
		t.Errorf("web after restoring the import: %q", r.stdout)
	}
}
