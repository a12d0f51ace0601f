package sshexec

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/sandboxforge/sbf/drivers"
)

// Each way a command can end its spare without the spare's trap printing
// (or with the trap printing elsewhere) still gives the right result, and
// the shell goes on with the next command.
func TestCommandsThatEndTheirSpareUnusually(t *testing.T) {
	p, g := guest(t, Fallbacks{})
	file := filepath.Join(t.TempDir(), "out")
	cases := []struct{ command, stdout string }{
		{"echo plain; exit 3", "plain\n"},
		{"exec >" + file + "; echo moved; exit 4", ""},
		{"exec 2>&1; echo err >&2; exit 5", "err\n"},
		{"echo replaced; exec sh -c 'exit 6'", "replaced\n"},
		{"__sbf_n=99; echo renumbered; exit 7", "renumbered\n"},
		{"trap 'echo own trap' EXIT; exit 8", "own trap\n"},
		{"sh -c 'kill -TERM $PPID'; echo not reached", ""},
	}
	for i, c := range cases {
		for round := range 2 { // the second round runs after the first left something owed
			res, err := p.Exec(context.Background(), instance, drivers.ExecRequest{Command: c.command})
			want := 3 + i
			if i == len(cases)-1 {
				want = 128 + int(syscall.SIGTERM)
			}
			if err != nil || res.ExitCode != want || res.Stdout != c.stdout || res.Via != "ssh-shell" {
				t.Errorf("%q (round %d) = %+v, %v; want exit %d and stdout %q", c.command, round, res, err, want,
					c.stdout)
			}
		}
	}
	if b, _ := os.ReadFile(file); string(b) != "moved\n" {
		t.Errorf("a marker was written into the command's own file: %q", b)
	}
	if s := g.Sessions.Load(); s != 1 {
		t.Errorf("%d sessions; every command should have run in the one guest shell", s)
	}
}

// A command's own EXIT trap runs as its spare ends: what it prints is that
// command's output, before the markers (the spare leaves them to the
// shell), not the start of the next command's. And the descriptors the
// spare prints its markers on are closed for the command.
func TestACommandsExitTrapAndTheMarkersDescriptors(t *testing.T) {
	p, _ := guest(t, Fallbacks{})
	run := func(command string) drivers.ExecResult {
		t.Helper()
		res, err := p.Exec(context.Background(), instance, drivers.ExecRequest{Command: command})
		if err != nil {
			t.Fatalf("%q: %v", command, err)
		}
		return res
	}
	if res := run("trap 'echo own trap' EXIT; echo first"); res.Stdout != "first\nown trap\n" || res.ExitCode != 0 {
		t.Errorf("a command with an EXIT trap = %+v; want its trap's line in its own output", res)
	}
	if res := run("echo next"); res.Stdout != "next\n" {
		t.Errorf("the command after it = %q", res.Stdout)
	}
	long := strings.Repeat("x", maxSpareLine)
	if res := run("trap 'echo own trap' EXIT; echo " + long); res.Stdout != long+"\nown trap\n" {
		t.Errorf("a long command with an EXIT trap: %.40q…", res.Stdout)
	}
	if _, err := os.Stat("/proc/self/fd"); err != nil {
		t.Skip("no /proc/self/fd to list a command's descriptors")
	}
	fds := strings.Fields(run("ls /proc/self/fd").Stdout)
	if slices.Contains(fds, "8") || slices.Contains(fds, "9") {
		t.Errorf("the command holds the markers' descriptors: %v", fds)
	}
}

// Lines of every length reach the spare byte for byte: short ones on its
// line, long ones after their length.
func TestCommandLinesOfEveryLength(t *testing.T) {
	p, _ := guest(t, Fallbacks{})
	for _, n := range []int{0, 1, maxSpareLine - 20, maxSpareLine, maxSpareLine + 1, 64 << 10} {
		body := strings.Repeat("ab'\"$\\\n", n/7+1)[:n]
		command := "cat <<'EOF'\n" + body + "\nEOF"
		res, err := p.Exec(context.Background(), instance, drivers.ExecRequest{Command: command})
		if err != nil || res.ExitCode != 0 || res.Stdout != body+"\n" {
			t.Errorf("a %d-byte heredoc: exit %d, %d bytes back (%v)", n, res.ExitCode, len(res.Stdout), err)
		}
	}
	if line := commandLine(strings.Repeat("x", maxSpareLine)); !strings.HasPrefix(line, "@") {
		t.Errorf("a long command went on the spare's line: %.40q", line)
	}
}
