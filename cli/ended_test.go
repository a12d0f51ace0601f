package cli

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// status and completion show the sandboxes that are not over; --all
// lists the destroyed ones too (issue 21, item 4).
func TestStatusAndCompletionLeaveEndedSandboxesOut(t *testing.T) {
	dir := simDir(t, simSpec)
	env := map[string]string{"SBF_STATE_HOME": t.TempDir()}
	for _, args := range [][]string{
		{"up", "--new", "gone", "--auto-approve"}, {"up", "--new", "kept", "--auto-approve"},
		{"destroy", "gone", "--auto-approve"},
	} {
		if r := sbf(t, env, append(args, "-C", dir)...); r.code != 0 {
			t.Fatalf("%v: exit %d %s", args, r.code, r.stderr)
		}
	}
	r := sbf(t, env, "status", "-C", dir)
	if strings.Contains(r.stdout, "gone") || !strings.Contains(r.stdout, "kept") ||
		!strings.Contains(r.stdout, "1 sandbox destroyed or expired is not shown (sbf status --all lists them).") {
		t.Errorf("status:\n%s", r.stdout)
	}
	if r := sbf(t, env, "status", "-C", dir, "--all"); !strings.Contains(r.stdout, "gone") ||
		!strings.Contains(r.stdout, "destroyed") {
		t.Errorf("status --all:\n%s", r.stdout)
	}
	var rep struct {
		Sandboxes []struct{ Name string }
		Ended     int `json:"ended_not_shown"`
	}
	r = sbf(t, env, "status", "-C", dir, "--json")
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || rep.Ended != 1 || len(rep.Sandboxes) != 3 {
		t.Errorf("status --json: %v %+v", err, rep)
	}
	for _, command := range []string{"exec", "destroy", "extend"} {
		r := sbf(t, env, "__complete", "-C", dir, command, "")
		if strings.Contains(r.stdout, "gone\n") || !strings.Contains(r.stdout, "kept\n") {
			t.Errorf("%s completes:\n%s", command, r.stdout)
		}
	}
}

// A task whose sandbox was destroyed keeps the end of its output, and
// task logs says where it comes from instead of "not declared".
func TestTaskLogsAfterTheSandboxEnded(t *testing.T) {
	dir := simDir(t, "[vm]\ndriver = \"sim\"\n")
	env := map[string]string{"SBF_STATE_HOME": t.TempDir()}
	if r := sbf(t, env, "up", "--auto-approve", "--new", "scratch", "-C", dir); r.code != 0 {
		t.Fatal(r.stderr)
	}
	r := sbf(t, env, "task", "start", "-C", dir, "--json", "scratch", "--", "sh", "-c",
		"echo first; head -c 20000 /dev/zero | tr '\\0' x; echo; echo last; sleep 60")
	var task struct {
		ID string `json:"task_id"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &task); err != nil {
		t.Fatalf("start: %v %s %s", err, r.stdout, r.stderr)
	}
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if logs := sbf(t, env, "task", "logs", "-C", dir, "--tail", "1", task.ID); logs.stdout == "last\n" {
			break
		}
	}
	if r := sbf(t, env, "destroy", "scratch", "-C", dir, "--auto-approve"); r.code != 0 {
		t.Fatalf("destroy: %s", r.stderr)
	}
	logs := sbf(t, env, "task", "logs", "-C", dir, task.ID)
	if logs.code != 0 || !strings.HasSuffix(logs.stdout, "\nlast\n") || strings.Contains(logs.stdout, "first") ||
		len(logs.stdout) != 16<<10 || !strings.Contains(logs.stderr, "ended with its sandbox scratch") ||
		!strings.Contains(logs.stderr, "the last 16 KiB") {
		t.Errorf("logs after destroy: exit %d, %d bytes ending %q\n%s", logs.code, len(logs.stdout),
			logs.stdout[max(0, len(logs.stdout)-20):], logs.stderr)
	}
	if tail := sbf(t, env, "task", "logs", "-C", dir, "--tail", "1", task.ID); tail.stdout != "last\n" {
		t.Errorf("--tail 1 of the saved output: %q", tail.stdout)
	}
	if r := sbf(t, env, "task", "status", "-C", dir, task.ID); !strings.Contains(r.stdout, "stopped") ||
		!strings.Contains(r.stdout, "the sandbox was destroyed") {
		t.Errorf("status: %s", r.stdout)
	}
}
