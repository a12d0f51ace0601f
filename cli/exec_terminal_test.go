package cli

import (
	"bufio"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/creack/pty"
)

// interruptOnTerminal runs c on a pseudo-terminal and, once its output
// holds after, types Ctrl-C there: the terminal sends SIGINT to its
// foreground process group, as a person's does. It types it once more if
// the command still runs 2 s later, as a person would: the guest's dash
// loses a SIGINT that comes while it forks (measured here: about 1 in 20
// with `echo ready; sleep 30`, before issue 40's changes too). It returns
// the exit code and all the output.
func interruptOnTerminal(t *testing.T, c *exec.Cmd, after string) (int, string) {
	t.Helper()
	tty, err := pty.Start(c)
	if err != nil {
		t.Skipf("no pty here: %v", err)
	}
	defer tty.Close()
	seen := make(chan string, 1)
	typedAt := make(chan struct{}, 1)
	var typedOnce atomic.Bool
	go func() {
		r := bufio.NewReader(tty)
		var buf strings.Builder
		typed := false
		for {
			b, err := r.ReadByte()
			if err != nil {
				seen <- buf.String()
				return
			}
			buf.WriteByte(b)
			if !typed && strings.Contains(buf.String(), after) {
				typed = true
				tty.Write([]byte{3}) // ^C: VINTR
				typedOnce.Store(true)
				typedAt <- struct{}{}
			}
		}
	}()
	done := make(chan error, 1)
	go func() { done <- c.Wait() }()
	again := time.NewTimer(2 * time.Second)
	defer again.Stop()
	deadline := time.After(30 * time.Second)
	for finished := false; !finished; {
		select {
		case err = <-done:
			finished = true
		case <-typedAt:
			again.Reset(2 * time.Second)
		case <-again.C:
			if typedOnce.Load() {
				tty.Write([]byte{3})
			}
		case <-deadline:
			c.Process.Kill()
			t.Fatalf("%v on a terminal never finished", c.Args)
		}
	}
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	}
	return code, strings.ReplaceAll(drained(tty, seen), "\r\n", "\n")
}

// Ctrl-C at sbf exec reaches the command, and the command's own status
// comes back, as ssh -t passes it on: a trap's `exit 9` is 9, not 130
// (issue 40); a command the interrupt ends is 130.
func TestExecOnATerminalPassesTheStatusAfterCtrlC(t *testing.T) {
	w := applied(t)
	code, out := interruptOnTerminal(t, w.cmd(nil, "exec", "api", "--", "sh", "-c",
		`trap "echo cleaned up; exit 9" INT; echo ready; sleep 30`), "ready")
	if code != 9 || !strings.Contains(out, "cleaned up") {
		t.Errorf("a trap's exit 9 after Ctrl-C: exit %d\n%s", code, out)
	}
	code, out = interruptOnTerminal(t, w.cmd(nil, "exec", "api", "--", "sh", "-c", "echo ready; sleep 30"), "ready")
	if code != 130 {
		t.Errorf("a command Ctrl-C ended: exit %d\n%s", code, out)
	}
}

// A command the guest has not is said in sbf's words with the shell's 127,
// never as the wrapper's "sh: 1: eval: ..." (issue 40).
func TestExecOnATerminalSaysCommandNotFound(t *testing.T) {
	w := applied(t)
	code, out := onTerminal(t, w.cmd(nil, "exec", "api", "--", "nosuchcmd"), noPrompt, "")
	if code != 127 || strings.TrimSpace(out) != "sbf: nosuchcmd: command not found in the guest" {
		t.Errorf("exit %d\n%q", code, out)
	}
}
