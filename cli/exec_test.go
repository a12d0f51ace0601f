package cli

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
)

// applied is a sim workspace whose sandboxes run.
func applied(t *testing.T) *simWorkspace {
	w := newSimWorkspace(t, simSpec)
	if r := w.run(nil, "apply", "--auto-approve"); r.code != 0 {
		t.Fatalf("apply: %s%s", r.stdout, r.stderr)
	}
	return w
}

// The command's status passes through; sbf's own failures exit 125 and
// a timeout 124, so a script can tell them apart.
func TestExecExitStatuses(t *testing.T) {
	t.Parallel() // subprocesses and waits: it overlaps with the others
	w := applied(t)
	cases := []struct {
		name   string
		args   []string
		code   int
		stderr string
	}{
		{"the command's status", []string{"exec", "api", "--", "sh", "-c", "echo oops >&2; exit 42"}, 42, "oops\n"},
		{"the command's 1", []string{"exec", "api", "--", "false"}, 1, ""},
		{"the command's 2 (not a usage error)", []string{"exec", "api", "--", "sh", "-c", "exit 2"}, 2, ""},
		{"not found in the guest", []string{"exec", "api", "--", "no-such-command-anywhere"}, 127, "not found"},
		{"no such sandbox", []string{"exec", "nope", "--", "true"}, 125, "nope"},
		{"a bad flag", []string{"exec", "--no-such-flag", "api", "--", "true"}, 125, "unknown flag"},
		{"no command", []string{"exec", "api"}, 125, "put the command after --"},
		{"a timeout", []string{"exec", "api", "--timeout", "300ms", "--", "sleep", "30"}, 124, "timed out"},
		{"-t without a terminal", []string{"exec", "-t", "api", "--", "true"}, 125,
			"stdin and stdout here are not both terminals"},
		{"shell without a terminal", []string{"shell", "api"}, 125, "not both terminals"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := w.run(nil, c.args...)
			if r.code != c.code || !strings.Contains(r.stderr, c.stderr) {
				t.Errorf("sbf %s: exit %d, stderr %q; want %d and %q", strings.Join(c.args, " "), r.code, r.stderr,
					c.code, c.stderr)
			}
		})
	}
	for args, code := range map[string]int{"exit 3": 3, "true": 0, "sleep 30": 124} {
		r := w.run(nil, "exec", "api", "--json", "--timeout", "2s", "--", "sh", "-c", args)
		var res struct {
			ExitCode int  `json:"exit_code"`
			TimedOut bool `json:"timed_out"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &res); err != nil || r.code != code ||
			code != 124 && res.ExitCode != code || res.TimedOut != (code == 124) {
			t.Errorf("exec --json -- %s: exit %d (want %d), %v %s", args, r.code, code, err, r.stdout)
		}
	}
	if r := w.run(nil, "exec", "nope", "--json", "--", "true"); r.code != 125 ||
		!strings.Contains(r.stdout, `"error"`) {
		t.Errorf("--json failure: exit %d, %s", r.code, r.stdout)
	}
}

// Output reaches the terminal while the command runs, not at its end.
func TestExecStreamsOutput(t *testing.T) {
	w := applied(t)
	gate := filepath.Join(t.TempDir(), "gate")
	c := w.cmd(nil, "exec", "api", "--", "sh", "-c",
		"echo first; while [ ! -e "+gate+" ]; do sleep 0.05; done; echo second")
	stdout, err := c.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewReader(stdout)
	if line, err := readLineWithin(lines, 10*time.Second); line != "first\n" {
		t.Fatalf("first line %q, %v: output was held back", line, err)
	}
	os.WriteFile(gate, nil, 0o644)
	if rest, _ := io.ReadAll(lines); string(rest) != "second\n" {
		t.Errorf("rest %q", rest)
	}
	if err := c.Wait(); err != nil {
		t.Error(err)
	}
}

func readLineWithin(r *bufio.Reader, d time.Duration) (string, error) {
	type line struct {
		s   string
		err error
	}
	got := make(chan line, 1)
	go func() { s, err := r.ReadString('\n'); got <- line{s, err} }()
	select {
	case l := <-got:
		return l.s, l.err
	case <-time.After(d):
		return "", os.ErrDeadlineExceeded
	}
}

// Ctrl-C reaches the command, which may clean up and choose its status;
// sbf does not die of it first.
func TestExecForwardsInterrupts(t *testing.T) {
	w := applied(t)
	started := filepath.Join(t.TempDir(), "started")
	// One argument is shell syntax: the trapping shell is the command.
	c := w.cmd(nil, "exec", "api", "--", `trap "echo cleaned up; exit 7" INT; touch `+started+
		`; while :; do sleep 0.05; done`)
	var out bytes.Buffer
	c.Stdout = &out
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	waitForFile(t, started)
	c.Process.Signal(syscall.SIGINT)
	err := c.Wait()
	if ee, _ := err.(*exec.ExitError); ee == nil || ee.ExitCode() != 7 || out.String() != "cleaned up\n" {
		t.Errorf("after Ctrl-C: %v, output %q", err, out.String())
	}
}

func waitForFile(t *testing.T, path string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(path); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never appeared", path)
		}
	}
}

// stdin goes to the command only with -i.
func TestExecPassesStdinOnlyWithDashI(t *testing.T) {
	w := applied(t)
	for _, c := range []struct {
		flags []string
		want  string
	}{{nil, ""}, {[]string{"-i"}, "piped"}} {
		cmd := w.cmd(nil, append(append([]string{"exec"}, c.flags...), "api", "--", "cat")...)
		cmd.Stdin = strings.NewReader("piped")
		out, err := cmd.Output()
		if err != nil || string(out) != c.want {
			t.Errorf("exec %v -- cat: %q, %v; want %q", c.flags, out, err, c.want)
		}
	}
}

// On a terminal, -t runs the command on one in the sandbox, and sbf shell
// opens a shell there; what is typed reaches it and its status comes back.
func TestExecTerminalAndShell(t *testing.T) {
	w := applied(t)
	for _, c := range []struct {
		name  string
		args  []string
		typed string
		want  string
		code  int
	}{
		{"exec -t", []string{"exec", "-t", "api", "--", "sh", "-c",
			`test -t 0 && read x && echo "tty says $x"; exit 4`}, "hi\r", "tty says hi", 4},
		{"shell", []string{"shell", "api"}, "echo \"in $SBF_SIM_INSTANCE\"; exit 6\r", "in sbf-", 6},
	} {
		t.Run(c.name, func(t *testing.T) {
			cmd := w.cmd([]string{"TERM=vt100"}, c.args...)
			tty, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 30, Cols: 100})
			if err != nil {
				t.Fatal(err)
			}
			defer tty.Close()
			var out bytes.Buffer
			copied := make(chan struct{})
			go func() { io.Copy(&out, tty); close(copied) }()
			time.Sleep(300 * time.Millisecond) // let sbf put the terminal in raw mode
			io.WriteString(tty, c.typed)
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case err = <-done:
			case <-time.After(20 * time.Second):
				cmd.Process.Kill()
				t.Fatal("no exit")
			}
			// Once sbf has exited the terminal reads what it wrote, then EIO;
			// closing it before that drops the output's tail.
			select {
			case <-copied:
			case <-time.After(10 * time.Second):
				t.Error("the terminal's output did not end after sbf exited")
			}
			tty.Close()
			<-copied
			ee, _ := err.(*exec.ExitError)
			if ee == nil || ee.ExitCode() != c.code || !strings.Contains(out.String(), c.want) {
				t.Errorf("%v: %v, output %q; want exit %d and %q", c.args, err, out.String(), c.code, c.want)
			}
		})
	}
}
