// Package scripts holds the shell scripts behind make run, make lima and
// make release; its tests check them without running a VM or a build.
package scripts

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Every script parses.
func TestScriptsParse(t *testing.T) {
	files, _ := filepath.Glob("*.sh")
	if len(files) == 0 {
		t.Fatal("no scripts")
	}
	for _, f := range files {
		if out, err := exec.Command("bash", "-n", f).CombinedOutput(); err != nil {
			t.Errorf("%s: %v\n%s", f, err, out)
		}
	}
}

// with_heartbeat writes "LABEL: still running" while its command runs,
// returns the command's status, and leaves set -e working inside the
// command's functions.
func TestWithHeartbeat(t *testing.T) {
	gate := filepath.Join(t.TempDir(), "go")
	script := `set -euo pipefail
source ./heartbeat.sh
SBF_HEARTBEAT_SECONDS=1
wait_for_gate() { while [ ! -e "$1" ]; do sleep 0.05; done; }
with_heartbeat "waiting" wait_for_gate "$GATE"
echo "after"
two_steps() { false; echo "set -e was off inside the command"; }
with_heartbeat "failing" two_steps
echo "not reached"
`
	cmd := exec.Command("bash", "-c", script)
	cmd.Env = append(os.Environ(), "GATE="+gate)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stdout strings.Builder
	cmd.Stdout = &stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stderr)
	var lines []string
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if strings.Contains(sc.Text(), "waiting: still running") {
			os.WriteFile(gate, nil, 0o644) // the command ends once a heartbeat was seen
		}
	}
	err = cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
		t.Errorf("exit: %v (want 1, from the failing command)", err)
	}
	if stdout.String() != "after\n" {
		t.Errorf("stdout %q", stdout.String())
	}
	if len(lines) == 0 || !strings.HasPrefix(lines[0], "    ... waiting: still running (") {
		t.Errorf("stderr %q", lines)
	}
}

// A heartbeat stopped just after it started (its command ended at once)
// runs none of its caller's traps: a subshell killed by SIGTERM before it
// had reset the traps it was forked with ran the caller's EXIT trap, which
// in make test ended every job running beside the step (scripts/test.sh),
// and elsewhere would remove the caller's work folder.
func TestAHeartbeatStoppedAtOnceRunsNoTrapOfItsCaller(t *testing.T) {
	ran := filepath.Join(t.TempDir(), "ran")
	script := `source ./heartbeat.sh
trap 'echo "$BASHPID" >>"$RAN"' EXIT
for i in $(seq 100); do with_heartbeat "quick" true; done
`
	cmd := exec.Command("bash", "-c", script)
	cmd.Env = append(os.Environ(), "RAN="+ran)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	got, _ := os.ReadFile(ran)
	if lines := strings.Fields(string(got)); len(lines) != 1 {
		t.Errorf("the EXIT trap ran %d times (pids %v): want once, in the caller", len(lines), lines)
	}
}

// On a loaded machine every turn of the heartbeat's loop takes longer than
// its one-second sleep (here a ps that takes a second, as a busy fork
// does): the lines still come at their interval, by the clock. Counting
// turns, the first came after six turns of two seconds: 12 s, not 6.
func TestHeartbeatKeepsItsIntervalWhenEachLookIsSlow(t *testing.T) {
	bin := t.TempDir()
	ps, err := exec.LookPath("ps")
	if err != nil {
		t.Skip("no ps")
	}
	os.WriteFile(filepath.Join(bin, "ps"), []byte("#!/bin/sh\nsleep 1\nexec "+ps+" \"$@\"\n"), 0o755)
	gate := filepath.Join(t.TempDir(), "go")
	script := `source ./heartbeat.sh
SBF_HEARTBEAT_SECONDS=6
with_heartbeat "slow" sh -c 'while [ ! -e "$GATE" ]; do sleep 0.05; done'
`
	cmd := exec.Command("bash", "-c", script)
	cmd.Env = append(os.Environ(), "GATE="+gate, "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stderr)
	first := ""
	for sc.Scan() {
		if first == "" && strings.Contains(sc.Text(), "slow: still running") {
			first = sc.Text()
			os.WriteFile(gate, nil, 0o644)
		}
	}
	cmd.Wait()
	var secs int
	if _, err := fmt.Sscanf(strings.TrimPrefix(first, "    ... slow: still running ("), "%ds)", &secs); err != nil ||
		secs >= 12 {
		t.Errorf("first line %q: want it within one slow turn of 6 s", first)
	}
}

// install.sh takes SBF_VERSION with or without the tag's v: both download
// from the release tagged v1.2.3.
func TestInstallVersionSpellings(t *testing.T) {
	for _, v := range []string{"1.2.3", "v1.2.3"} {
		bin := t.TempDir()
		// A curl that says which URL it was asked for, and fails.
		os.WriteFile(filepath.Join(bin, "curl"), []byte("#!/bin/sh\nfor a; do u=$a; done\necho \"URL $u\" >&2\nexit 22\n"),
			0o755)
		cmd := exec.Command("sh", "install.sh")
		cmd.Env = append(os.Environ(), "PATH="+bin+":/usr/bin:/bin", "SBF_VERSION="+v, "SBF_DOWNLOAD_URL=")
		out, _ := cmd.CombinedOutput()
		want := "URL https://github.com/sandboxforge/sbf/releases/download/v1.2.3/SHA256SUMS"
		if !strings.Contains(string(out), want) {
			t.Errorf("SBF_VERSION=%s: %s", v, out)
		}
	}
}

// once runs a step again unless it passed on this very committed tree: a
// failure or a skip is never remembered, nor a pass on a tree with anything
// uncommitted; CI, SBF_TEST_AGAIN, another EXTRA or SBF_ variable run it again.
func TestOnceRemembersOnlyAPassOnACommittedTree(t *testing.T) {
	repo, scripts := t.TempDir(), t.TempDir()
	self, err := filepath.Abs("passed.sh")
	if err != nil {
		t.Fatal(err)
	}
	git := func(args ...string) {
		t.Helper()
		c := exec.Command("git", append([]string{"-C", repo, "-c", "user.name=t", "-c", "user.email=t@t"}, args...)...)
		if out, err := c.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	git("init", "-q")
	write := func(name, text string) {
		if err := os.WriteFile(filepath.Join(repo, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("a", "1")
	git("add", "a")
	git("commit", "-qm", "one")
	// step appends a line to ran each time it runs, and passes unless told.
	ran := filepath.Join(scripts, "ran")
	step := func(extra string, env ...string) string {
		t.Helper()
		c := exec.Command("bash", "-c", `set -euo pipefail; source "$SELF"
step() { echo x >>"$RAN"; [ "${SKIP:-0}" = 0 ] || return 77; [ "${FAIL:-0}" = 0 ]; }
once "unit tests" "$EXTRA" step`)
		c.Dir = repo
		c.Env = append(os.Environ(), "SELF="+self, "RAN="+ran, "EXTRA="+extra, "CI=", "SBF_TEST_AGAIN=",
			"SBF_PASSED_DIR="+filepath.Join(scripts, "passed"))
		c.Env = append(c.Env, env...)
		out, err := c.CombinedOutput()
		if (err != nil) != (extra == "" && slices.Contains(env, "FAIL=1")) {
			t.Errorf("once exited %v (a skip passes, only a failure fails)\n%s", err, out)
		}
		return string(out)
	}
	runs := func() int {
		data, _ := os.ReadFile(ran)
		return strings.Count(string(data), "x")
	}
	for _, c := range []struct {
		what  string
		extra string
		env   []string
		runs  int
	}{
		{"a first run that fails", "", []string{"FAIL=1"}, 1},
		{"a run that skips (77)", "", []string{"SKIP=1"}, 2},
		{"a run after a failure and a skip", "", nil, 3},
		{"a run after a pass", "", nil, 3},
		{"another EXTRA", "node v2", nil, 4},
		{"another SBF_ variable", "", []string{"SBF_TEST_LIMACTL=/x"}, 5},
		{"a go.work in use", "", []string{"GOWORK=" + filepath.Join(scripts, "go.work")}, 6},
		{"a go.work in use, again", "", []string{"GOWORK=" + filepath.Join(scripts, "go.work")}, 7},
		{"CI", "", []string{"CI=true"}, 8},
		{"SBF_TEST_AGAIN=1", "", []string{"SBF_TEST_AGAIN=1"}, 9},
	} {
		out := step(c.extra, c.env...)
		if runs() != c.runs {
			t.Fatalf("%s: the step ran %d times in all, want %d\n%s", c.what, runs(), c.runs, out)
		}
	}
	write("b", "untracked")
	step("")
	step("")
	if runs() != 11 {
		t.Fatalf("with an untracked file the step ran %d times in all, want 11 (never remembered)", runs())
	}
	git("add", "b")
	git("commit", "-qm", "two")
	step("")
	if out := step(""); runs() != 12 || !strings.Contains(out, "unit tests: passed on this very tree") {
		t.Fatalf("a new commit: the step ran %d times in all, want 12 (once for the new tree)\n%s", runs(), out)
	}
}

// once_built runs a step again when what its package is built from changes, committed or
// not (its sources, a dependency's, its tests and testdata, go.mod), and not for a change to
// a package it does not use; CI runs it always.
func TestOnceBuiltFollowsWhatItsPackageIsBuiltFrom(t *testing.T) {
	mod, scripts := t.TempDir(), t.TempDir()
	self, err := filepath.Abs("passed.sh")
	if err != nil {
		t.Fatal(err)
	}
	write := func(name, text string) {
		t.Helper()
		os.MkdirAll(filepath.Join(mod, filepath.Dir(name)), 0o755)
		if err := os.WriteFile(filepath.Join(mod, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", "module example.com/m\n\ngo 1.22\n")
	write("a/a.go", "package a\n\nimport _ \"example.com/m/b\"\n")
	write("a/a_test.go", "package a\n")
	write("a/testdata/fuzz/FuzzA/seed", "go test fuzz v1\n")
	write("b/b.go", "package b\n")
	write("c/c.go", "package c\n")
	ran := filepath.Join(scripts, "ran")
	runs := 0
	for _, c := range []struct {
		what string
		edit func()
		env  string
		runs bool
	}{
		{"a first run", func() {}, "", true},
		{"nothing changed", func() {}, "", false},
		{"a package it does not use", func() { write("c/c.go", "package c\n\nvar C = 1\n") }, "", false},
		{"its dependency", func() { write("b/b.go", "package b\n\nvar B = 1\n") }, "", true},
		{"its test", func() { write("a/a_test.go", "package a\n\nvar T = 1\n") }, "", true},
		{"its fuzz corpus", func() { write("a/testdata/fuzz/FuzzA/seed2", "go test fuzz v1\n") }, "", true},
		{"go.mod", func() { write("go.mod", "module example.com/m\n\ngo 1.23\n") }, "", true},
		{"another count", func() {}, "2x", true},
		{"CI", func() {}, "CI=true", true},
		{"after CI", func() {}, "", false},
	} {
		c.edit()
		cmd := exec.Command("bash", "-c", `set -euo pipefail; source "$SELF"
once_built ./a "fuzz FuzzA" "${COUNT:-1x}" sh -c 'echo x >>"$RAN"'`)
		cmd.Dir = mod
		cmd.Env = append(os.Environ(), "SELF="+self, "RAN="+ran, "CI=", "SBF_TEST_AGAIN=", "GOFLAGS=", "GOWORK=off",
			"SBF_PASSED_DIR="+filepath.Join(scripts, "passed"))
		if strings.HasSuffix(c.env, "x") {
			cmd.Env = append(cmd.Env, "COUNT="+c.env)
		} else if c.env != "" {
			cmd.Env = append(cmd.Env, c.env)
		}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", c.what, err, out)
		}
		data, _ := os.ReadFile(ran)
		if got := strings.Count(string(data), "x"); got-runs != map[bool]int{true: 1, false: 0}[c.runs] {
			t.Fatalf("%s: ran %d times, want %v\n%s", c.what, got-runs, c.runs, out)
		}
		runs = strings.Count(string(data), "x")
	}
	// The digest holds names from the module's root, not where it is: two clones share it.
	digestIn := func(dir string) string {
		t.Helper()
		cmd := exec.Command("bash", "-c", `set -euo pipefail; source "$SELF"; built_from "" ./a`)
		cmd.Dir, cmd.Env = dir, append(os.Environ(), "SELF="+self, "GOFLAGS=", "GOWORK=off")
		out, err := cmd.Output()
		if err != nil || len(strings.TrimSpace(string(out))) != 64 {
			t.Fatalf("built_from in %s: %v %q", dir, err, out)
		}
		return string(out)
	}
	clone := filepath.Join(t.TempDir(), "elsewhere [1]")
	if out, err := exec.Command("cp", "-a", mod, clone).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, out)
	}
	if a, b := digestIn(mod), digestIn(clone); a != b {
		t.Errorf("the same module at two paths: %s and %s", a, b)
	}
}

// stable_mtimes gives a tracked file that matches HEAD a time that follows its content, the
// same in every clone and another for another content; a changed file and a link keep theirs;
// folders get one only when nothing is changed; CI is left alone.
func TestStableMtimesFollowContent(t *testing.T) {
	self, err := filepath.Abs("stable-mtimes.sh")
	if err != nil {
		t.Fatal(err)
	}
	git := func(dir string, args ...string) {
		t.Helper()
		c := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=t", "-c", "user.email=t@t"}, args...)...)
		if out, err := c.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	origin := t.TempDir()
	git(origin, "init", "-q")
	for name, text := range map[string]string{"same": "x", "other": "y", "d/in": "z", "edited": "e"} {
		os.MkdirAll(filepath.Join(origin, filepath.Dir(name)), 0o755)
		if err := os.WriteFile(filepath.Join(origin, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("same", filepath.Join(origin, "link")); err != nil {
		t.Fatal(err)
	}
	git(origin, "add", ".")
	git(origin, "commit", "-qm", "one")
	run := func(dir string, env ...string) {
		t.Helper()
		c := exec.Command("bash", "-c", `set -euo pipefail; source "$SELF"; stable_mtimes`)
		c.Dir, c.Env = dir, append(os.Environ(), append([]string{"SELF=" + self, "CI=", "SBF_STABLE_MTIMES="}, env...)...)
		if out, err := c.CombinedOutput(); err != nil {
			t.Fatalf("stable_mtimes: %v\n%s", err, out)
		}
	}
	mtime := func(path string) int64 {
		t.Helper()
		fi, err := os.Lstat(path)
		if err != nil {
			t.Fatal(err)
		}
		return fi.ModTime().UnixNano()
	}
	clone := func() string {
		dir := filepath.Join(t.TempDir(), "c")
		git(origin, "clone", "-q", origin, dir)
		return dir
	}
	a, b, ci := clone(), clone(), clone()
	run(a)
	if err := os.WriteFile(filepath.Join(b, "edited"), []byte("E"), 0o644); err != nil {
		t.Fatal(err)
	}
	git(b, "update-index", "--assume-unchanged", "d/in") // an edit git status does not show
	if err := os.WriteFile(filepath.Join(b, "d/in"), []byte("Z"), 0o644); err != nil {
		t.Fatal(err)
	}
	edited, link, dir := mtime(filepath.Join(b, "edited")), mtime(filepath.Join(b, "link")), mtime(filepath.Join(b, "d"))
	hidden := mtime(filepath.Join(b, "d/in"))
	run(b)
	run(ci, "CI=true")
	if mtime(filepath.Join(b, "d/in")) != hidden {
		t.Error("a file git assumes unchanged got a time")
	}
	for _, name := range []string{"same", "other"} {
		if mtime(filepath.Join(a, name)) != mtime(filepath.Join(b, name)) {
			t.Errorf("%s: two clones' times differ", name)
		}
		if mtime(filepath.Join(a, name)) == mtime(filepath.Join(ci, name)) {
			t.Errorf("%s: set in CI", name)
		}
	}
	if mtime(filepath.Join(a, "same")) == mtime(filepath.Join(a, "other")) {
		t.Error("two contents share a time")
	}
	if mtime(filepath.Join(a, "d/in")) == mtime(filepath.Join(ci, "d/in")) {
		t.Error("d/in: no time set")
	}
	if mtime(filepath.Join(b, "edited")) != edited || mtime(filepath.Join(b, "link")) != link {
		t.Error("a changed file or a link got a time")
	}
	if mtime(filepath.Join(b, "d")) != dir || mtime(filepath.Join(a, "d")) == dir {
		t.Error("a folder got a time with a file changed, or none with nothing changed")
	}
	if data, _ := os.ReadFile(filepath.Join(b, "edited")); string(data) != "E" {
		t.Errorf("a file's content changed: %q", data)
	}
}
