package cli

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// sbf task logs -f prints a task's output as it comes, each piece once,
// and returns when the task has ended.
func TestTaskLogsFollow(t *testing.T) {
	t.Parallel()
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

// A task id may be given by a unique beginning, as git takes a short
// commit id; one two tasks share is refused naming both, one no task has
// says where the ids are, and completion offers them.
func TestTaskIDsByTheirBeginning(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write(t, filepath.Join(dir, ".sandboxforge.toml"), "[vm]\ndriver = \"sim\"\n[sandboxes.api]\n")
	if r := sbf(t, nil, "apply", "-C", dir, "--auto-approve"); r.code != 0 {
		t.Fatal(r.stderr)
	}
	var ids []string
	for range 2 {
		r := sbf(t, nil, "task", "start", "-C", dir, "--json", "api", "--", "true")
		var task struct {
			ID string `json:"task_id"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &task); err != nil {
			t.Fatalf("start: %v %s %s", err, r.stdout, r.stderr)
		}
		ids = append(ids, task.ID)
	}
	short := ids[0][:len(ids[0])-4]
	if strings.HasPrefix(ids[1], short) {
		short = ids[0] // they share that much: the whole id is the shortest unique beginning
	}
	if r := sbf(t, nil, "task", "status", "-C", dir, "--json", short); r.code != 0 || !strings.Contains(r.stdout, ids[0]) {
		t.Errorf("status %s: %d %s %s", short, r.code, r.stdout, r.stderr)
	}
	common := ""
	for i := 0; i < len(ids[0]) && ids[0][i] == ids[1][i]; i++ {
		common = ids[0][:i+1]
	}
	if common != "" {
		r := sbf(t, nil, "task", "status", "-C", dir, common)
		if r.code == 0 || !strings.Contains(r.stderr, ids[0]) || !strings.Contains(r.stderr, ids[1]) {
			t.Errorf("an ambiguous beginning %q: %d %s", common, r.code, r.stderr)
		}
	}
	if r := sbf(t, nil, "task", "logs", "-C", dir, "zzzz"); r.code == 0 || !strings.Contains(r.stderr, "sbf task list") {
		t.Errorf("an unknown id: %d %s", r.code, r.stderr)
	}
	r := sbf(t, nil, "__complete", "task", "status", "-C", dir, "")
	if !strings.Contains(r.stdout, ids[0]+"\t") || !strings.Contains(r.stdout, ids[1]+"\t") {
		t.Errorf("completion: %s %s", r.stdout, r.stderr)
	}
}
