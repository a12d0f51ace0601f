//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// testGuestWritesBack makes the escape suite's config-write and link-out
// attacks against the real VM: a guest folder holding sbf's configuration
// (the sim, the host's root mounted), a git hook, an .envrc and links out
// comes back into the workspace over MCP without any of them, and the
// next plan is unchanged.
func testGuestWritesBack(t *testing.T, w *ws, instance string) {
	canary := t.TempDir()
	os.WriteFile(filepath.Join(canary, "secret"), []byte("TOKEN=hunter2\n"), 0o600)
	m := w.mcp()
	defer m.close()
	evil := strings.Join([]string{
		"rm -rf /tmp/evil && mkdir -p /tmp/evil/sub /tmp/evil/.git/hooks",
		`printf '[vm]\ndriver = "sim"\nmounts = ["/:/hostroot:rw"]\n' > /tmp/evil/.sandboxforge.local.toml`,
		"cp /tmp/evil/.sandboxforge.local.toml /tmp/evil/sub/.sandboxforge.toml",
		fmt.Sprintf(`printf '#!/bin/sh\ntouch %s/pwned\n' > /tmp/evil/.git/hooks/pre-commit`, canary),
		"echo 'touch /tmp/pwned' > /tmp/evil/.envrc",
		"ln -s " + canary + "/secret /tmp/evil/.env", "ln -s /etc /tmp/evil/etc", "ln -s ../../../.. /tmp/evil/up",
		"echo fine > /tmp/evil/fine.txt",
	}, " && ")
	if r := m.call("run_command", map[string]any{"instance_id": instance, "command": evil}); r["exit_code"] != float64(0) {
		t.Fatalf("making the guest's folder: %v", r)
	}
	if out, bad := m.try("copy_from_instance", map[string]any{"instance_id": instance,
		"remote_path": "/tmp/evil/.sandboxforge.local.toml", "local_path": ".sandboxforge.local.toml"}); !bad ||
		out["error_code"] != "HOST_PATH_DENIED" {
		t.Errorf("copy onto .sandboxforge.local.toml: %v", out)
	}
	res := m.call("sync_instance_to_workspace", map[string]any{"instance_id": instance, "remote_path": "/tmp/evil",
		"local_path": "back"})
	if n := len(res["skipped_paths"].([]any)); n != 4 {
		t.Errorf("skipped_paths: %v", res["skipped_paths"])
	}
	if n := len(res["skipped_links"].([]any)); n != 3 {
		t.Errorf("skipped_links: %v", res["skipped_links"])
	}
	if got, _ := os.ReadFile(filepath.Join(w.root, "back", "fine.txt")); string(got) != "fine\n" {
		t.Errorf("fine.txt: %q", got)
	}
	for _, p := range []string{".sandboxforge.local.toml", "back/.sandboxforge.local.toml", "back/sub/.sandboxforge.toml",
		"back/.git", "back/.envrc", "back/.env", "back/etc", "back/up"} {
		if _, err := os.Lstat(filepath.Join(w.root, p)); err == nil {
			t.Errorf("%s was written from the guest", p)
		}
	}
	if r := w.sbf("", nil, "plan", "--detailed-exitcode"); r.code != 0 {
		t.Errorf("the plan changed after the guest wrote back: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if entries, _ := os.ReadDir(canary); len(entries) != 1 {
		t.Errorf("the canary changed: %v", entries)
	}
	os.RemoveAll(filepath.Join(w.root, "back"))
}
