package cli

import (
	"strings"
	"testing"
)

// Shells complete sandbox names (declared and ad hoc) where a command
// takes one.
func TestCompletionOfSandboxNames(t *testing.T) {
	dir := simDir(t, simSpec)
	env := map[string]string{"SBF_STATE_HOME": t.TempDir()}
	if r := sbf(t, env, "up", "--auto-approve", "--new", "scratch", "-C", dir); r.code != 0 {
		t.Fatal(r.stderr)
	}
	for _, args := range [][]string{
		{"__complete", "-C", dir, "exec", ""},
		{"__complete", "-C", dir, "extend", ""},
		{"__complete", "-C", dir, "destroy", "api", ""},
		{"__complete", "-C", dir, "plan", "--target", ""},
		{"__complete", "-C", dir, "cp", "./x", ""},
	} {
		r := sbf(t, env, args...)
		out := r.stdout
		want := []string{"scratch", "web"}
		if args[3] != "destroy" {
			want = append(want, "api")
		}
		for _, name := range want {
			if args[3] == "cp" {
				name += ":"
			}
			if !strings.Contains(out, name+"\n") {
				t.Errorf("%v: %q missing from\n%s", args[3:], name, out)
			}
		}
		if args[3] == "destroy" && strings.Contains(out, "api\n") {
			t.Errorf("destroy offered a name already given:\n%s", out)
		}
	}
	if r := sbf(t, env, "completion", "bash"); r.code != 0 || !strings.Contains(r.stdout, "__start_sbf") {
		t.Errorf("completion bash: exit %d", r.code)
	}
}

// Snapshot commands complete a sandbox, then its recorded snapshots;
// clone's --snapshot completes those of its source.
func TestCompletionOfSnapshotNames(t *testing.T) {
	dir := simDir(t, simSpec)
	env := map[string]string{"SBF_STATE_HOME": t.TempDir()}
	if r := sbf(t, env, "apply", "-C", dir, "--auto-approve"); r.code != 0 {
		t.Fatal(r.stderr)
	}
	if r := sbf(t, env, "snapshot", "create", "-C", dir, "api", "before"); r.code != 0 {
		t.Fatal(r.stderr)
	}
	for _, args := range [][]string{
		{"__complete", "-C", dir, "snapshot", "restore", "api", ""},
		{"__complete", "-C", dir, "snapshot", "delete", "api", ""},
		{"__complete", "-C", dir, "clone", "api", "--snapshot", ""},
	} {
		if r := sbf(t, env, args...); !strings.Contains(r.stdout, "before\n") {
			t.Errorf("%v: no snapshot 'before' in\n%s", args[3:], r.stdout)
		}
	}
	if r := sbf(t, env, "__complete", "-C", dir, "snapshot", "restore", "web", ""); strings.Contains(r.stdout, "before") {
		t.Errorf("web's completion offers api's snapshot:\n%s", r.stdout)
	}
}
