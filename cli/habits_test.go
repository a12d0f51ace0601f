package cli

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"
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

// up takes apply's --auto-approve; -C's help names its default once;
// extend --json's plan has lists, never null, when nothing was planned.
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

// Docker's and kubectl's words land where they should (issue 40): ps is
// status, rm and delete destroy, ssh is shell, logs is task logs; stop
// and start say what sbf offers instead, where cobra offered "up" and
// "stats"; ls without a path points at status; get and list suggest it.
func TestDockerAndKubectlWords(t *testing.T) {
	dir := simDir(t, simSpec)
	env := map[string]string{"SBF_STATE_HOME": t.TempDir()}
	if r := sbf(t, env, "apply", "-C", dir, "--auto-approve"); r.code != 0 {
		t.Fatalf("apply: exit %d\n%s", r.code, r.stderr)
	}
	status, ps := sbf(t, env, "status", "-C", dir), sbf(t, env, "ps", "-C", dir)
	if ps.code != 0 || ps.stdout != status.stdout || !strings.Contains(ps.stdout, "AGE") {
		t.Errorf("ps is not status: exit %d\n%s\nstatus:\n%s", ps.code, ps.stdout, status.stdout)
	}
	if r := sbf(t, env, "ssh", "--help"); r.code != 0 || !strings.Contains(r.stdout, "login shell") {
		t.Errorf("ssh --help: exit %d\n%s", r.code, r.stdout)
	}
	for _, c := range []struct {
		args string
		code int
		want string
	}{
		{"stop api", 2, "there is no 'sbf stop': a sandbox runs until its lease ends; 'sbf destroy NAME'"},
		{"start api", 2, "there is no 'sbf start': 'sbf up NAME' boots a sandbox"},
		{"stop --help", 2, "'sbf up NAME' makes it again"},
		{"ls", 2, "the sandboxes themselves are listed by 'sbf status'"},
		{"get", 2, "Did you mean this?\n\tcat\n\tstatus"},
		{"list", 2, "\tstatus"},
		{"rm api:/tmp/x", 2, "to remove a file in one: sbf exec api -- rm /tmp/x"},
		{"logs api", 1, "api is a sandbox: 'sbf logs' (as 'sbf task logs') prints a background task's output"},
	} {
		r := sbf(t, env, append(strings.Fields(c.args), "-C", dir)...)
		if r.code != c.code || !strings.Contains(r.stderr, c.want) || strings.Contains(r.stderr, "\tup\n") ||
			strings.Contains(r.stderr, "stats") || strings.Contains(r.stderr, "sbf stop --help") {
			t.Errorf("sbf %s: exit %d (want %d), no %q in:\n%s", c.args, r.code, c.code, c.want, r.stderr)
		}
	}
	out := sbf(t, env, "task", "start", "api", "-C", dir, "--json", "--", "echo", "from-task")
	var task struct {
		ID string `json:"task_id"`
	}
	if err := json.Unmarshal([]byte(out.stdout), &task); err != nil || task.ID == "" {
		t.Fatalf("task start: %v\n%s%s", err, out.stdout, out.stderr)
	}
	for i := 0; ; i++ {
		r := sbf(t, env, "logs", task.ID, "-C", dir)
		if r.code == 0 && r.stdout == "from-task\n" {
			break
		}
		if i == 100 {
			t.Fatalf("logs %s: exit %d %q %q", task.ID, r.code, r.stdout, r.stderr)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if r := sbf(t, env, "rm", "api", "-C", dir, "--auto-approve"); r.code != 0 ||
		!strings.Contains(r.stdout, "1 destroyed") {
		t.Errorf("rm api: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := sbf(t, env, "delete", "web", "-C", dir, "--auto-approve"); r.code != 0 ||
		!strings.Contains(r.stdout, "1 destroyed") {
		t.Errorf("delete web: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}
