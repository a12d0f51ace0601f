// Package scripts holds the shell scripts behind make run, make lima and
// make release; its tests check them without running a VM or a build.
package scripts

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
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
