package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// -C DIR is git's: sbf runs as if started in DIR, finding the workspace
// there or above and reading relative host paths from there; a missing
// folder is said as such, and --json commands fail in JSON.
func TestDirectoryFlagActsAsGits(t *testing.T) {
	dir := simDir(t, simSpec)
	env := map[string]string{"SBF_STATE_HOME": t.TempDir()}
	sub := filepath.Join(dir, "app", "src")
	write(t, filepath.Join(sub, "f.txt"), "f")
	if r := sbf(t, env, "-C", sub, "status"); r.code != 0 || !strings.Contains(r.stdout, "Workspace "+dir) {
		t.Errorf("-C a subfolder: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := sbf(t, env, "-C", dir, "apply", "--auto-approve"); r.code != 0 {
		t.Fatal(r.stderr)
	}
	if r := sbf(t, env, "-C", sub, "cp", "f.txt", "api:/f.txt"); r.code != 0 {
		t.Errorf("cp of a path relative to -C: exit %d\n%s", r.code, r.stderr)
	}
	missing := filepath.Join(dir, "nonexistent")
	r := sbf(t, env, "-C", missing, "status")
	if r.code != 2 || !strings.Contains(r.stderr, "-C "+missing+": no such folder") {
		t.Errorf("-C a missing folder: exit %d\n%s", r.code, r.stderr)
	}
	empty := t.TempDir()
	r = sbf(t, env, "-C", empty, "status", "--json")
	var doc struct {
		Error struct {
			Code    string `json:"error_code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil || r.code != 1 ||
		doc.Error.Code != "WORKSPACE_CONFIG_INVALID" || !strings.Contains(doc.Error.Message, "no .sandboxforge.toml in") {
		t.Errorf("status --json without a workspace: exit %d %v\n%s%s", r.code, err, r.stdout, r.stderr)
	}
	if r := sbf(t, env, "-C", missing, "status", "--json"); r.code != 1 || !strings.Contains(r.stdout, "no such folder") {
		t.Errorf("status --json -C missing: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	os.Remove(missing)
}
