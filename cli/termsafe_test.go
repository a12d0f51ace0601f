package cli

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/sandboxforge/sbf/egress"
	"github.com/sandboxforge/sbf/internal/hostpath"
	"github.com/sandboxforge/sbf/internal/termsafe"
	"github.com/sandboxforge/sbf/reconcile"
	"github.com/sandboxforge/sbf/reconcile/plan"
	"github.com/sandboxforge/sbf/state"
)

// hostile is what issue 29 (point 10) put in a run_command string and in
// guest file names: CR, erase line and cursor up (the row above vanishes),
// an OSC title, a C1 CSI as a raw byte and as a character, a bidi override.
const hostile = "x\r\x1b[2K\x1b[1A\x1b]0;pwned\x07\x9b\u009b\u202ey"

// hostileSh makes the same in a guest shell, for file names, less the raw
// C1 byte: a name that is not UTF-8 fails the sim's copy out (io/fs), so
// the copy would never reach the warnings.
const hostileSh = `$(printf 'x\r\033[2K\033[1A\033]0;pwned\007\302\233\342\200\256y')`

// terminalSafe fails when out holds anything a terminal would act on
// besides newline and tab.
func terminalSafe(t *testing.T, where, out string) {
	t.Helper()
	if !utf8.ValidString(out) {
		t.Errorf("%s: invalid UTF-8 reaches the terminal: %q", where, out)
		return
	}
	for _, r := range out {
		if r != '\n' && r != '\t' && termsafe.Unsafe(r) {
			t.Errorf("%s: U+%04X reaches the terminal raw:\n%q", where, r, out)
			return
		}
	}
}

// Every sbf command that prints what a client or a guest wrote shows it
// escaped: the history, ls, the warnings of a copy back, errors, task and
// stats rows. --json stays exact.
func TestHostileStringsReachNoTerminalRaw(t *testing.T) {
	w := applied(t)
	w.must("exec", "api", "--", "sh", "-c", "mkdir -p d && touch \"d/"+hostileSh+"\" && ln -s /etc/passwd \"d/l"+
		hostileSh+"\" && true '"+hostile+"'")
	w.must("task", "start", "api", "--", "sh", "-c", "true '"+hostile+"'")
	back := filepath.Join(w.root, "back")
	for _, args := range [][]string{
		{"history"}, {"ls", "api:d"}, {"ls", "-l", "api:d"}, {"ls", "-R", "api:."}, {"cp", "api:d", back},
		{"sync", "--from", "api", filepath.Join(w.root, "back2"), "d"}, {"task", "list"}, {"stats"},
		{"cat", "api:d/" + hostile + "missing"}, {"ls", "api:" + hostile}, {"exec", "nosuch" + hostile, "--", "true"},
		{"status"},
	} {
		r := w.run(nil, args...)
		terminalSafe(t, "sbf "+strings.Join(args, " ")+" stdout", r.stdout)
		terminalSafe(t, "sbf "+strings.Join(args, " ")+" stderr", r.stderr)
	}
	if r := w.run(nil, "cp", "api:d", filepath.Join(w.root, "back3")); !strings.Contains(r.stderr,
		`skipped the link back3/lx\r\x1b[2K\x1b[1A\x1b]0;pwned\x07\u009b\u202ey -> /etc/passwd`) {
		t.Errorf("the skipped link is not shown escaped:\n%s", r.stderr)
	}
	if r := w.run(nil, "history"); !strings.Contains(r.stdout, `x\r\x1b[2K\x1b[1A\x1b]0;pwned\x07`) {
		t.Errorf("the command is not shown escaped:\n%s", r.stdout)
	}
	// --json is exact: JSON escapes the controls itself, and the string is the guest's.
	if r := w.run(nil, "history", "--json"); !strings.Contains(r.stdout, `\r\u001b[2K\u001b[1A\u001b]0;pwned\u0007`) ||
		strings.ContainsAny(r.stdout, "\x1b\r") {
		t.Errorf("history --json:\n%s", r.stdout)
	}
}

// The printers no sim run reaches with a hostile string: status notes,
// the egress log, a task's error, snapshot names, plan problems and
// corrections, warnings and errors.
func TestRenderersEscapeHostileStrings(t *testing.T) {
	var out, errb bytes.Buffer
	a := &app{stdout: &out, stderr: &errb, getenv: func(string) string { return "" }}
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	a.printStatusTable([]reconcile.SandboxStatus{{Name: "api", Instance: "i", Driver: "sim",
		Drift: "drift " + hostile, LastError: "failed: " + hostile + "\nsecond line"}}, now, false)
	fmt.Fprintln(a.stdout, egressLine(egress.Entry{Time: now, Decision: "denied", Method: "CONNECT" + hostile,
		Host: "evil" + hostile + ".example", Port: 443, Reason: hostile}))
	code := 1
	a.printTask(&state.Task{ID: "t1", Sandbox: "api", Status: "failed", ExitCode: &code, LogPath: "/tmp/" + hostile,
		ErrorMessage: hostile}, false)
	a.printSnapshots(reconcile.SnapshotCreate, &reconcile.SnapshotResult{Sandbox: "api",
		Snapshot: &state.Snapshot{Name: "s" + hostile}}, false)
	a.printSnapshots(reconcile.SnapshotList, &reconcile.SnapshotResult{Sandbox: "api",
		Snapshots: []*state.Snapshot{{Name: "s" + hostile}}}, false)
	p := &plan.Plan{Problems: []plan.Problem{{Sandbox: "api", Message: hostile + "\n" + hostile}},
		Refresh: []plan.Refresh{{Sandbox: "api", Note: hostile}}}
	p.Render(a.stdout, plan.Style{})
	p.RenderProblems(a.stderr)
	a.reportSkipped(hostpath.Report{SkippedLinks: []hostpath.SkippedLink{{Path: hostile, Target: hostile}},
		SkippedPaths: []hostpath.SkippedPath{{Path: hostile, Rule: hostile}}})
	printErrors(a.stderr, errors.Join(errors.New(hostile), errors.New("guest said: "+hostile)))
	newProgress(a.stderr, time.Hour).event(reconcile.Event{Sandbox: "api", Kind: "exec", Message: hostile})
	terminalSafe(t, "stdout", out.String())
	terminalSafe(t, "stderr", errb.String())
	if n := strings.Count(out.String()+errb.String(), `\x1b]0;pwned\x07`); n < 12 {
		t.Errorf("the hostile string is shown %d times, escaped; want every one of 12:\n%s\n%s", n, out.String(),
			errb.String())
	}
}

// sbf cat and sbf exec pass the guest's own bytes through, as cat and ssh
// do: that is the data asked for, not sbf's words about it.
func TestGuestOutputItselfPassesThrough(t *testing.T) {
	w := applied(t)
	w.must("exec", "api", "--", "sh", "-c", "printf 'a\\033[2Kb' > raw.txt")
	if r := w.run(nil, "cat", "api:raw.txt"); r.stdout != "a\x1b[2Kb" {
		t.Errorf("cat: %q", r.stdout)
	}
	if r := w.run(nil, "exec", "api", "--", "cat", "raw.txt"); r.stdout != "a\x1b[2Kb" {
		t.Errorf("exec: %q", r.stdout)
	}
}
