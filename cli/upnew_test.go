package cli

import (
	"slices"
	"strings"
	"testing"
)

// `sbf up dve` (a typo of dev) boots nothing without a terminal to ask:
// it names the closest declared sandbox and the flags that make a new
// one; --auto-approve makes it (--new alone still leaves the plan's
// question, which nobody can answer here), and a name up made before
// needs no --new.
func TestUpRefusesUndeclaredNames(t *testing.T) {
	dir := simDir(t, "[vm]\ndriver = \"sim\"\n[sandboxes.dev]\n[sandboxes.api]\n")
	env := map[string]string{"SBF_STATE_HOME": t.TempDir()}
	r := sbf(t, env, "-C", dir, "up", "dve")
	if r.code != 1 || !strings.Contains(r.stderr, `no file declares a sandbox "dve"`) ||
		!strings.Contains(r.stderr, "(did you mean dev?)") ||
		!strings.Contains(r.stderr, "sbf up dve --new --auto-approve") {
		t.Errorf("up dve: exit %d\n%s", r.code, r.stderr)
	}
	if r := sbf(t, env, "-C", dir, "status"); strings.Contains(r.stdout, "dve") {
		t.Errorf("the refused name was recorded:\n%s", r.stdout)
	}
	if r := sbf(t, env, "-C", dir, "up", "dev", "--auto-approve"); r.code != 0 {
		t.Errorf("up dev (declared): exit %d\n%s", r.code, r.stderr)
	}
	if r := sbf(t, env, "-C", dir, "up", "scratch", "--new"); r.code != 1 ||
		!strings.Contains(r.stderr, "--auto-approve") {
		t.Errorf("up scratch --new without a terminal: exit %d\n%s", r.code, r.stderr)
	}
	for _, args := range [][]string{{"up", "scratch", "--new", "--auto-approve"}, {"up", "scratch2", "--auto-approve"},
		{"up", "scratch", "--auto-approve"}} {
		if r := sbf(t, env, append([]string{"-C", dir}, args...)...); r.code != 0 {
			t.Errorf("sbf %s: exit %d\n%s", strings.Join(args, " "), r.code, r.stderr)
		}
	}
	if got := closestNames("api2", []string{"api", "dev", "web"}); len(got) != 1 || got[0] != "api" {
		t.Errorf("closestNames(api2) = %q", got)
	}
	if got := closestNames("database", []string{"api", "dev"}); got != nil {
		t.Errorf("closestNames(database) = %q, want none", got)
	}
}

// `sbf up NAME` shows its plan and asks as apply does (issue 40): on a
// terminal only "yes" makes anything; without one it refuses, naming
// --auto-approve, and makes nothing; a lease renewal alone is no change
// and is not asked about.
func TestUpAsksAsApplyDoes(t *testing.T) {
	for answer, wantCode := range map[string]int{"no": 1, "yes": 0} {
		t.Run(answer, func(t *testing.T) {
			w := newSimWorkspace(t, simSpec)
			code, out := onTerminal(t, w.cmd(nil, "up", "api"), "Only 'yes' is accepted: ", answer)
			if code != wantCode || !strings.Contains(out, "+ api  create   not found") ||
				!strings.Contains(out, "Do you want to perform these actions?") {
				t.Errorf("answer %q: exit %d, want %d\n%s", answer, code, wantCode, out)
			}
			if made := len(w.world()) == 1; made != (answer == "yes") {
				t.Errorf("answer %q: instances %v", answer, w.world())
			}
		})
	}
	w := newSimWorkspace(t, simSpec)
	r := w.run(nil, "up", "api")
	if r.code != 1 || !strings.Contains(r.stderr, "refusing to change sandboxes without confirmation") ||
		!strings.Contains(r.stderr, "--auto-approve") || len(w.world()) != 0 {
		t.Errorf("up without a terminal: exit %d, instances %v\n%s", r.code, w.world(), r.stderr)
	}
	if r := w.run(nil, "up", "api", "--auto-approve"); r.code != 0 || len(w.world()) != 1 {
		t.Fatalf("up --auto-approve: exit %d\n%s", r.code, r.stderr)
	}
	if r := w.run(nil, "up", "api"); r.code != 0 || !strings.Contains(r.stdout, "api: lease ") {
		t.Errorf("up of a running sandbox (a renewal) was asked about: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// On a terminal, `sbf up dve` names the declared sandbox it may have
// meant before the plan's one question, and makes the sandbox only for
// "yes".
func TestUpOnATerminalAsksBeforeANewName(t *testing.T) {
	for answer, wantCode := range map[string]int{"y": 1, "yes": 0} {
		t.Run(answer, func(t *testing.T) {
			w := newSimWorkspace(t, simSpec)
			code, out := onTerminal(t, w.cmd(nil, "up", "wbe"), "Only 'yes' is accepted: ", answer)
			if code != wantCode || !strings.Contains(out, `No file declares a sandbox "wbe" (did you mean web?)`) {
				t.Errorf("answer %q: exit %d, want %d\n%s", answer, code, wantCode, out)
			}
			made := slices.ContainsFunc(w.world(), func(i string) bool { return strings.HasSuffix(i, "-wbe") })
			if made != (answer == "yes") {
				t.Errorf("answer %q: instances %v", answer, w.world())
			}
		})
	}
}
