package cli

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// Terraform's single-dash spellings of the flags sbf shares with it are
// accepted; a misspelt flag is answered with the flag meant and the
// command's help (issue 21, item 5).
func TestTerraformHabits(t *testing.T) {
	dir := simDir(t, simSpec)
	env := map[string]string{"SBF_STATE_HOME": t.TempDir()}
	planFile := filepath.Join(t.TempDir(), "plan.json")
	r := sbf(t, env, "plan", "-C", dir, "-detailed-exitcode", "-json", "-target", "api", "-out="+planFile)
	var rep struct{ Changes []struct{ Sandbox string } }
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || r.code != 2 || len(rep.Changes) != 1 {
		t.Errorf("plan -detailed-exitcode -json -target api -out=FILE: exit %d %v\n%s%s", r.code, err, r.stdout,
			r.stderr)
	}
	if r := sbf(t, env, "apply", "-C", dir, "-auto-approve", "-lock-timeout", "1s", "-parallelism=2"); r.code != 0 ||
		!strings.Contains(r.stdout, "Apply complete: 2 added") {
		t.Errorf("apply -auto-approve: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := sbf(t, env, "exec", "api", "-C", dir, "--", "echo", "-json", "-auto-approve"); r.code != 0 ||
		r.stdout != "-json -auto-approve\n" {
		t.Errorf("the guest's command was rewritten: exit %d %q %q", r.code, r.stdout, r.stderr)
	}
	for _, c := range []struct{ args, want, help string }{
		{"plan --detailed-exitcodes", "(did you mean --detailed-exitcode?)", "Run 'sbf plan --help' for usage."},
		{"apply -no-renew", "(did you mean --no-renew?)", "Run 'sbf apply --help' for usage."},
		{"status --al", "(did you mean --all?)", "Run 'sbf status --help' for usage."},
	} {
		r := sbf(t, env, append(strings.Fields(c.args), "-C", dir)...)
		if r.code != 2 || !strings.Contains(r.stderr, c.want) || !strings.Contains(r.stderr, c.help) {
			t.Errorf("sbf %s: exit %d\n%s", c.args, r.code, r.stderr)
		}
	}
	if r := sbf(t, env, "exec", "api", "--jsn", "-C", dir, "--", "true"); r.code != 125 ||
		!strings.Contains(r.stderr, "(did you mean --json?)") {
		t.Errorf("exec --jsn: exit %d\n%s", r.code, r.stderr)
	}
}

// up never asks, and takes apply's --auto-approve for scripts written
// for apply; -C's help names its default once; extend --json's plan has
// lists, never null, when nothing was planned.
func TestSmallHabits(t *testing.T) {
	dir := simDir(t, simSpec)
	env := map[string]string{"SBF_STATE_HOME": t.TempDir()}
	if r := sbf(t, env, "up", "scratch", "--auto-approve", "-C", dir); r.code != 0 {
		t.Errorf("up --auto-approve: exit %d\n%s", r.code, r.stderr)
	}
	help := sbf(t, env, "plan", "--help")
	for _, line := range strings.Split(help.stdout, "\n") {
		if strings.Contains(line, "--directory") && (strings.Count(line, "default") != 1 || strings.Contains(line,
			`(default ".")`)) {
			t.Errorf("-C's help: %q", line)
		}
	}
	r := sbf(t, env, "extend", "nope", "10m", "--json", "-C", dir)
	if r.code != 1 || !strings.Contains(r.stdout, `"changes": []`) {
		t.Errorf("extend --json of an unknown sandbox: exit %d\n%s", r.code, r.stdout)
	}
	var rep map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || rep["sandboxes"] == nil {
		t.Errorf("sandboxes is null: %v\n%s", err, r.stdout)
	}
}
