package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// What sbf does to a sandbox is in the workspace's history, secrets
// redacted; sbf history shows it, per sandbox too.
func TestHistoryOfCLICommands(t *testing.T) {
	w := newSimWorkspace(t, simSpec+"[infra.mysql]\nroot_password = \"s3cr3t-root\"\n")
	w.must("apply", "--auto-approve")
	if r := w.run(nil, "exec", "api", "--", "sh", "-c", "echo s3cr3t-root; exit 3"); r.code != 3 {
		t.Fatalf("exec: %d %s", r.code, r.stderr)
	}
	write(t, filepath.Join(w.root, "in.txt"), "data")
	w.must("cp", filepath.Join(w.root, "in.txt"), "api:copied.txt")
	w.must("cat", "api:copied.txt")
	w.must("ls", "web:.")
	w.run(nil, "cat", "api:missing")
	r := w.run(nil, "history", "--json")
	var h struct {
		Events []struct {
			Tool, Sandbox, Door, Command, Path string
			ErrorCode                          string `json:"error_code"`
			ExitCode                           *int   `json:"exit_code"`
			Bytes                              int64  `json:"bytes"`
		}
	}
	if err := json.Unmarshal([]byte(r.stdout), &h); err != nil || strings.Contains(r.stdout, "s3cr3t") {
		t.Fatalf("history --json: %v\n%s", err, r.stdout)
	}
	var got []string
	for _, e := range h.Events {
		got = append(got, e.Door+" "+e.Tool+" "+e.Sandbox)
	}
	// The lifecycle steps too, recorded by the engine (issue 30): the apply of each sandbox first.
	if strings.Join(got, ", ") != "cli apply api, cli apply web, cli exec api, cli cp api, cli cat api, cli ls web, "+
		"cli cat api" {
		t.Fatalf("events: %v", got)
	}
	h.Events = h.Events[2:]
	if e := h.Events[0]; e.Command != "sh -c 'echo ***; exit 3'" || e.ExitCode == nil || *e.ExitCode != 3 ||
		e.Bytes != 12 {
		t.Errorf("exec event: %+v", e)
	}
	if e := h.Events[2]; e.Path != "copied.txt" || e.Bytes != 4 {
		t.Errorf("cat event: %+v", e)
	}
	if e := h.Events[4]; e.ErrorCode != "GUEST_PATH_NOT_FOUND" {
		t.Errorf("failed cat: %+v", e)
	}
	r = w.run(nil, "history", "web")
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(lines) != 3 || !strings.Contains(lines[1], "apply") || !strings.Contains(lines[2], "ls") {
		t.Errorf("sbf history web:\n%s", r.stdout)
	}
	if st, err := os.Stat(filepath.Join(w.root, ".sandboxforge", "history.jsonl")); err != nil ||
		st.Mode().Perm() != 0o600 {
		t.Errorf("history file: %v %v", st, err)
	}
}
