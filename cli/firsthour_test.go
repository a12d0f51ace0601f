package cli

import (
	"github.com/sandboxforge/sbf/internal/testutil/pseudoterm"
	"os"
	"time"

	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/sandboxforge/sbf/spec"
)

// noPrompt is a prompt no command prints: onTerminal then only watches.
const noPrompt = "\x00"

// userUnfriendly is what a person should never read in sbf's output:
// Go's formatting slips, cobra's type names, tar's internals, Markdown
// quoting, a crash.
var userUnfriendly = regexp.MustCompile("%!|<nil>|stringArray|mkdirat|extracting |`|panic:|goroutine [0-9]")

// A new user's first hour (issue 32), replayed on a terminal command by
// command as they would type it: init → validate → apply → status →
// docker's and kubectl's habits (issue 40) → exec → cp in and out → a typo
// → task → snapshot → destroy. Every output is read as they read it, and
// each step does what its outcome line says.
func TestFirstHourOnATerminal(t *testing.T) {
	t.Parallel()
	w := newSimWorkspace(t, "")
	os.Remove(filepath.Join(w.root, spec.FileName))
	write(t, filepath.Join(w.root, "src", "a.txt"), "a")
	write(t, filepath.Join(w.root, "src", "sub", "b.txt"), "b")
	step := func(prompt, answer string, wantCode int, want string, args ...string) string {
		t.Helper()
		code, out := onTerminal(t, w.cmd(nil, args...), prompt, answer)
		out = strings.ReplaceAll(out, "\r\n", "\n")
		t.Logf("$ sbf %s\n%s", strings.Join(args, " "), out)
		if code != wantCode || !strings.Contains(out, want) {
			t.Fatalf("sbf %s: exit %d (want %d), no %q in:\n%s", strings.Join(args, " "), code, wantCode, want, out)
		}
		for _, l := range strings.Split(out, "\n") {
			if strings.HasSuffix(l, " ") && !strings.HasSuffix(l, ": ") { // a prompt waits after its colon
				t.Errorf("sbf %s: trailing space in %q", strings.Join(args, " "), l)
			}
		}
		if m := userUnfriendly.FindString(out); m != "" {
			t.Errorf("sbf %s: %q in its output", strings.Join(args, " "), m)
		}
		return out
	}
	const yes = "Only 'yes' is accepted: "
	step(noPrompt, "", 0, "one sandbox: dev, driver sim", "init", "--driver", "sim")
	step(noPrompt, "", 0, "Valid:", "validate")
	step(yes, "yes", 0, "Apply complete: 1 added, 0 changed, 0 destroyed.", "apply")
	step(noPrompt, "", 0, "AGE", "status")
	habitsOnATerminal(t, w, step)
	step(noPrompt, "", 0, "hello", "exec", "dev", "--", "echo", "hello")
	step(noPrompt, "", 0, "copied ./src to dev:/d2", "cp", "./src", "dev:/d2")
	step(noPrompt, "", 0, "copied ./src to dev:/d2/src", "cp", "./src", "dev:/d2") // /d2 exists now: into it
	step(noPrompt, "", 0, "src/sub/b.txt", "ls", "-R", "dev:/d2")
	step(noPrompt, "", 1, "does not exist", "cp", "./src/a.txt", "dev:/nowhere/")
	step(noPrompt, "", 0, "copied dev:/d2/src to ./back", "cp", "dev:/d2/src", "./back")
	if b, err := os.ReadFile(filepath.Join(w.root, "back", "sub", "b.txt")); err != nil || string(b) != "b" {
		t.Errorf("copied back: %q %v", b, err)
	}
	step(yes, "no", 1, `(did you mean dev?)`, "up", "dve")
	if got := w.world(); len(got) != 1 {
		t.Errorf("instances after the declined typo: %v", got)
	}
	out := step(noPrompt, "", 0, "task_", "task", "start", "dev", "--", "sh", "-c", "echo hi; sleep 0.2; echo bye")
	id := regexp.MustCompile(`task_([0-9a-f]{12})`).FindStringSubmatch(out)
	if id == nil {
		t.Fatalf("no task id in %q", out)
	}
	step(noPrompt, "", 0, "hi\nbye\n", "task", "logs", "-f", id[1][:4]) // docker's habit: the start of the id
	step(noPrompt, "", 0, "hi\nbye\n", "logs", id[1][:4])               // and its word
	step(noPrompt, "", 0, "Snapshot clean of sandbox dev taken.", "snapshot", "create", "dev", "clean")
	step(noPrompt, "", 0, "clean", "snapshot", "list", "dev")
	step(yes, "yes", 0, "Apply complete: 0 added, 0 changed, 1 destroyed.", "destroy", "dev")
	if got := w.world(); len(got) != 0 {
		t.Errorf("instances after destroy: %v", got)
	}
	step(noPrompt, "", 0, "sbf status --all lists them", "status")
}

// habitsOnATerminal is the first hour's stretch where docker's and
// kubectl's reflexes are typed (issue 40): ps, cp to -, stop, ls without a
// path, up of a new sandbox (asked, as apply asks), rm, a command the
// guest has not, and Ctrl-C at a command that traps it.
func habitsOnATerminal(t *testing.T, w *simWorkspace,
	step func(prompt, answer string, wantCode int, want string, args ...string) string) {
	t.Helper()
	const yes = "Only 'yes' is accepted: "
	step(noPrompt, "", 0, "AGE", "ps")
	step(noPrompt, "", 1, "not writing a tar archive to a terminal", "cp", "dev:/etc", "-")
	if _, err := os.Lstat(filepath.Join(w.root, "-")); err == nil {
		t.Error("cp dev:/etc - wrote a file named -")
	}
	step(noPrompt, "", 2, "there is no 'sbf stop'", "stop", "dev")
	step(noPrompt, "", 2, "listed by 'sbf status'", "ls")
	step(yes, "yes", 0, "Apply complete: 1 added, 0 changed, 0 destroyed.", "up", "scratch", "--new")
	step(yes, "yes", 0, "Apply complete: 0 added, 0 changed, 1 destroyed.", "rm", "scratch")
	ctrlCDuringUp(t, w)
	step(yes, "yes", 0, "Apply complete: 0 added, 0 changed, 1 destroyed.", "destroy", "--force", "slow")
	step(noPrompt, "", 127, "sbf: nosuchcmd: command not found in the guest", "exec", "dev", "--", "nosuchcmd")
	code, out := interruptOnTerminal(t, w.cmd(nil, "exec", "dev", "--", "sh", "-c",
		`trap "echo cleaned up; exit 9" INT; echo ready; sleep 30`), "ready")
	t.Logf("$ sbf exec dev -- sh -c ... (Ctrl-C)\n%s", out)
	if code != 9 || !strings.Contains(out, "cleaned up") {
		t.Errorf("Ctrl-C at a command whose trap exits 9: exit %d\n%s", code, out)
	}
}

// ctrlCDuringUp types Ctrl-C while `sbf up` boots a new sandbox, its boot
// a child process as limactl is (SBF_SIM_TOOL): the create finishes, sbf
// says so and exits 130, and the sandbox runs.
func ctrlCDuringUp(t *testing.T, w *simWorkspace) {
	t.Helper()
	boot := newHeldBoot(t)
	tm := pseudoterm.Start(t, w.cmd(boot.env, "up", "slow", "--new", "--auto-approve"))
	boot.waitStarted() // its boot is in flight
	tm.CtrlC()
	tm.WaitFor("Interrupt received", 30*time.Second)
	boot.release()
	code, out := tm.Wait(time.Minute)
	t.Logf("$ sbf up slow --new --auto-approve (Ctrl-C)\n%s", out)
	if code != 130 || !strings.Contains(out, "Interrupt received: finishing the steps in flight") ||
		!strings.Contains(out, "slow: create done") {
		t.Errorf("Ctrl-C during up: exit %d\n%s", code, out)
	}
	if r := w.run(nil, "status", "--json"); !strings.Contains(r.stdout, `"phase": "running"`) {
		t.Errorf("status after the Ctrl-C: %s", r.stdout)
	}
}
