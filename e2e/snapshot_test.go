//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"net"
	"os/exec"
	"testing"
	"time"

	"github.com/sandboxforge/sbf/internal/testutil"
)

// testSnapshots: snapshot_instance, list_snapshots, restore_snapshot and
// delete_snapshot on the running QEMU VM, through real `limactl snapshot`
// (savevm/loadvm): its table is parsed, a restore brings the guest's
// files back and the kept connection reconnects to the restored VM.
func testSnapshots(t *testing.T, parent *mcpSession, instance string) {
	m := &mcpSession{t: t, c: parent.c} // a failed call fails this subtest, from its own goroutine
	reachesHost := hostProbe(t, m, instance)
	cat := func() any {
		return m.call("run_command", map[string]any{"instance_id": instance,
			"command": "cat ~/snap-marker 2>/dev/null || echo none"})["stdout"]
	}
	before := reachesHost()
	m.call("run_command", map[string]any{"instance_id": instance,
		"command": "echo before > ~/snap-marker && sync"})
	start := time.Now()
	taken := m.call("snapshot_instance", map[string]any{"instance_id": instance, "name": "clean"})
	record("snapshot_instance (limactl snapshot create, running VM)", start)
	if taken["name"] != "clean" || taken["created_at"] == nil {
		t.Errorf("snapshot_instance: %v", taken)
	}
	list := m.call("list_snapshots", map[string]any{"instance_id": instance})
	if list["count"] != float64(1) {
		t.Fatalf("list_snapshots after one: %v", list)
	}
	if s := list["snapshots"].([]any)[0].(map[string]any); s["name"] != "clean" || s["size_bytes"] == nil {
		t.Errorf("the listed snapshot (limactl's table, parsed): %v", s)
	}
	if r, isErr := m.try("snapshot_instance", map[string]any{"instance_id": instance, "name": "clean"}); !isErr ||
		r["error_code"] != "SNAPSHOT_EXISTS" {
		t.Errorf("a second snapshot named clean: %v", r)
	}

	start = time.Now()
	exported := m.call("export_snapshot", map[string]any{"instance_id": instance, "name": "clean",
		"local_path": "clean.qcow2"})
	record("export_snapshot (qemu-img convert -U of the running VM's snapshot)", start)
	checkExport(t, fmt.Sprint(exported["local_path"]))

	m.call("run_command", map[string]any{"instance_id": instance,
		"command": "echo after > ~/snap-marker && sync"})
	start = time.Now()
	m.call("restore_snapshot", map[string]any{"instance_id": instance, "name": "clean"})
	record("restore_snapshot (limactl snapshot apply, running VM)", start)
	if got := cat(); got != "before\n" {
		t.Errorf("the marker after restoring clean = %q, want the snapshot's", got)
	}
	// Logged, not asserted: one run saw the guest's connections to the
	// host fail after a restore (docs/lima.md).
	t.Logf("the guest reaches the host through slirp (192.168.5.2): before the snapshot %v, after restoring it %v",
		before, reachesHost())
	m.call("delete_snapshot", map[string]any{"instance_id": instance, "name": "clean"})
	if list := m.call("list_snapshots", map[string]any{"instance_id": instance}); list["count"] != float64(0) {
		t.Errorf("list_snapshots after delete: %v", list)
	}
	checkExport(t, fmt.Sprint(exported["local_path"])) // the user's file outlives its snapshot
}

// hostProbe says whether the guest opens a TCP connection to a listener on
// this host's loopback through slirp's alias for it.
func hostProbe(t *testing.T, m *mcpSession, instance string) func() bool {
	port := testutil.ServeTCP(t, func(net.Conn) {}).Port
	return func() bool {
		r := m.call("run_command", map[string]any{"instance_id": instance,
			"command": fmt.Sprintf("timeout 15 bash -c 'exec 3<>/dev/tcp/192.168.5.2/%d'", port)})
		return r["exit_code"] == float64(0)
	}
}

// checkExport asks the host's qemu-img what an export is: a standalone
// qcow2 of the VM's 10 GiB disk.
func checkExport(t *testing.T, path string) {
	t.Helper()
	out, err := exec.Command("qemu-img", "info", "--output=json", path).Output()
	var info struct {
		Format  string `json:"format"`
		Size    int64  `json:"virtual-size"`
		Backing string `json:"backing-filename"`
	}
	if err != nil || json.Unmarshal(out, &info) != nil || info.Format != "qcow2" || info.Size != 10<<30 ||
		info.Backing != "" {
		t.Errorf("the export %s: %v %s", path, err, out)
	}
}

// testClone: clone_instance of the running ad-hoc VM through real
// `limactl clone` (the source is stopped for the copy and started again).
// The clone has the source's disk (the docker image imported there runs
// in it without an import) and then its own: a file written in it is not
// in the source, which runs on.
func testClone(t *testing.T, parent *mcpSession, source, image string) {
	m := &mcpSession{t: t, c: parent.c} // a failed call fails this subtest, from its own goroutine
	m.call("run_command", map[string]any{"instance_id": source, "command": "echo source > ~/clone-marker && sync"})
	start := time.Now()
	clone := m.call("clone_instance", map[string]any{"instance_id": source, "ttl_minutes": 30})
	record("clone_instance (stop source, limactl clone, start both)", start)
	id, _ := clone["instance_id"].(string)
	if id == "" || id == source || clone["source_instance_id"] != source || clone["status"] != "running" {
		t.Fatalf("clone_instance: %v", clone)
	}
	defer func() {
		if out, isErr := m.try("destroy_instance", map[string]any{"instance_id": id}); isErr {
			t.Errorf("destroy_instance of the clone: %v", out)
		}
	}()
	marker := func(inst string) any {
		return m.call("run_command", map[string]any{"instance_id": inst,
			"command": "cat ~/clone-marker"})["stdout"]
	}
	if got := marker(id); got != "source\n" {
		t.Errorf("the clone's marker = %q, want the source's", got)
	}
	ran := m.call("docker_run", map[string]any{"instance_id": id, "image": image, "detach": false,
		"command": "echo from-the-clone"})
	if out, _ := ran["stdout"].(string); out != "from-the-clone\n" {
		t.Errorf("docker_run in the clone (the source's image): %v", ran)
	}
	m.call("run_command", map[string]any{"instance_id": id, "command": "echo clone > ~/clone-marker && sync"})
	if a, b := marker(source), marker(id); a != "source\n" || b != "clone\n" {
		t.Errorf("after writing in the clone: source %q, clone %q", a, b)
	}
}
