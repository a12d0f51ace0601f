package cli

import (
	"slices"
	"strings"
	"testing"
)

// `sbf up dve` (a typo of dev) boots nothing without a terminal to ask:
// it names the closest declared sandbox and the flag that makes a new
// one; --new and --auto-approve make it, and a name up made before needs
// neither.
func TestUpRefusesUndeclaredNames(t *testing.T) {
	dir := simDir(t, "[vm]\ndriver = \"sim\"\n[sandboxes.dev]\n[sandboxes.api]\n")
	env := map[string]string{"SBF_STATE_HOME": t.TempDir()}
	r := sbf(t, env, "-C", dir, "up", "dve")
	if r.code != 1 || !strings.Contains(r.stderr, `no file declares a sandbox "dve"`) ||
		!strings.Contains(r.stderr, "(did you mean dev?)") || !strings.Contains(r.stderr, "sbf up dve --new") {
		t.Errorf("up dve: exit %d\n%s", r.code, r.stderr)
	}
	if r := sbf(t, env, "-C", dir, "status"); strings.Contains(r.stdout, "dve") {
		t.Errorf("the refused name was recorded:\n%s", r.stdout)
	}
	if r := sbf(t, env, "-C", dir, "up", "dev"); r.code != 0 {
		t.Errorf("up dev (declared): exit %d\n%s", r.code, r.stderr)
	}
	for _, args := range [][]string{{"up", "scratch", "--new"}, {"up", "scratch2", "--auto-approve"}, {"up", "scratch"}} {
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

// On a terminal, `sbf up dve` asks, naming the declared sandbox it may
// have meant, and makes the sandbox only for "yes".
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
