package cli

import (
	"encoding/json"
	"testing"
)

// sbf task logs -f prints a task's output as it comes, each piece once,
// and returns when the task has ended.
func TestTaskLogsFollow(t *testing.T) {
	dir := simDir(t, simSpec)
	env := map[string]string{"SBF_STATE_HOME": t.TempDir()}
	if r := sbf(t, env, "apply", "-C", dir, "--auto-approve"); r.code != 0 {
		t.Fatal(r.stderr)
	}
	r := sbf(t, env, "task", "start", "-C", dir, "--json", "api", "--", "sh", "-c",
		"echo up; sleep 1.5; echo down")
	var task struct {
		ID string `json:"task_id"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &task); err != nil {
		t.Fatalf("start: %v %s %s", err, r.stdout, r.stderr)
	}
	if r := sbf(t, env, "task", "logs", "-C", dir, "-f", task.ID); r.code != 0 || r.stdout != "up\ndown\n" {
		t.Fatalf("logs -f: %d %q %q", r.code, r.stdout, r.stderr)
	}
	if r := sbf(t, env, "task", "logs", "-C", dir, "-f", "--tail", "1", task.ID); r.code != 2 {
		t.Errorf("-f with --tail: %d %q", r.code, r.stderr)
	}
}
