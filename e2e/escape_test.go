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

// testGuestDataIsData makes issue 29's git and compose attacks against the
// real VM: what a Lima guest syncs back is read by sbf on the host only as
// data. A repository planted under another name, whose config runs a
// command (core.fsmonitor, core.hooksPath, core.worktree = .), is read by
// validate_image with that folder as workspace_root and runs nothing; a
// compose file the guest wrote, naming /proc/self/environ and a host file,
// is refused by the plan with its position, and neither sbf's environment
// nor the host file shows anywhere.
func testGuestDataIsData(t *testing.T, w *ws, instance string) {
	canary := t.TempDir()
	marker := filepath.Join(canary, "pwned-by-git")
	os.WriteFile(filepath.Join(canary, "secret"), []byte("TOKEN=hunter2\n"), 0o600)
	secret := fmt.Sprintf("sbf-e2e-secret-%d", os.Getpid())
	t.Setenv("SBF_E2E_SECRET", secret) // in sbf's environment from here on, as an operator's token would be
	m := w.mcp()
	defer m.close()
	defer m.logOnFailure(t)
	plant := strings.Join([]string{
		"rm -rf /tmp/gd && mkdir -p /tmp/gd/planted/objects/info /tmp/gd/planted/refs/heads /tmp/gd/planted/hooks",
		"mkdir -p /tmp/gd/evilws && echo 'ref: refs/heads/main' > /tmp/gd/planted/HEAD",
		fmt.Sprintf(`printf '[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tworktree = .\n`+
			`\tfsmonitor = "touch %s; echo"\n\thooksPath = hooks\n' > /tmp/gd/planted/config`, marker),
		fmt.Sprintf(`printf '#!/bin/sh\ntouch %s\n' > /tmp/gd/planted/hooks/post-checkout`, marker),
		"chmod +x /tmp/gd/planted/hooks/post-checkout",
		fmt.Sprintf(`printf 'services:\n  web:\n    image: busybox\n    label_file: /proc/self/environ\n`+
			`    env_file: %s/secret\n' > /tmp/gd/evilws/compose.yaml`, canary),
	}, " && ")
	made := m.call("run_command", map[string]any{"instance_id": instance, "command": plant})
	if made["exit_code"] != float64(0) {
		t.Fatalf("the guest's files: %v", made)
	}
	defer os.RemoveAll(filepath.Join(w.root, "planted"))
	defer os.RemoveAll(filepath.Join(w.root, "evilws"))

	// Git: the planted repository comes back, then the build cache reads the state of "its" workspace.
	m.call("sync_instance_to_workspace", map[string]any{"instance_id": instance, "remote_path": "/tmp/gd/planted",
		"local_path": "planted"})
	if _, err := os.Stat(filepath.Join(w.root, "planted", "config")); err != nil {
		t.Fatalf("the planted repository did not come back: %v", err)
	}
	v, _ := m.try("validate_image", map[string]any{"instance_id": instance, "image_name": "sbf-e2e/built:1",
		"workspace_root": filepath.Join(w.root, "planted")})
	if _, err := os.Stat(marker); err == nil {
		t.Errorf("the planted git config ran a command on the host (validate_image: %v)", v)
	}

	// Compose: the operator's spec for a workspace whose compose file the guest writes.
	w.write("evilws/.sandboxforge.toml", "[vm]\ndriver = \"lima\"\n[compose]\nfiles = [\"compose.yaml\"]\n"+
		"[sandboxes.app]\ncompose = true\n")
	m.call("copy_from_instance", map[string]any{"instance_id": instance,
		"remote_path": "/tmp/gd/evilws/compose.yaml", "local_path": "evilws/compose.yaml"})
	r := w.sbf("", nil, "-C", filepath.Join(w.root, "evilws"), "plan")
	out := r.stdout + r.stderr
	if r.code == 0 || !strings.Contains(out, "compose.yaml:4:") || !strings.Contains(out, "compose.yaml:5:") {
		t.Errorf("sbf plan of the guest's compose file: exit %d\n%s", r.code, out)
	}
	planned, bad := m.try("plan", map[string]any{"workspace_root": filepath.Join(w.root, "evilws")})
	if !bad || planned["error_code"] != "WORKSPACE_CONFIG_INVALID" {
		t.Errorf("MCP plan of the guest's compose file: %v", planned)
	}
	for what, text := range map[string]string{"sbf plan": out, "MCP plan": fmt.Sprint(planned)} {
		if strings.Contains(text, secret) || strings.Contains(text, "hunter2") {
			t.Errorf("%s showed sbf's environment or the host file:\n%s", what, text)
		}
	}
	if entries, _ := os.ReadDir(canary); len(entries) != 1 {
		t.Errorf("the canary changed: %v", entries)
	}
}
