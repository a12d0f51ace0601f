// Package pseudoterm runs a command on a pseudo-terminal for tests, as a
// person types at it. A package of its own so that only the tests that
// type at a terminal link creack/pty.
package pseudoterm

import (
	"errors"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/sandboxforge/sbf/internal/clock"
	"github.com/sandboxforge/sbf/internal/testutil"
)

// Terminal is a command running on a pseudo-terminal, as a person types at
// it: its session's controlling terminal, its group the foreground one, so
// the terminal's Ctrl-C reaches the whole group (not the process alone).
type Terminal struct {
	t    testing.TB
	cmd  *exec.Cmd
	tty  *os.File
	out  *testutil.SyncBuffer
	read chan struct{}
}

// Start starts c on a new pseudo-terminal (skipping the test
// where there is none) and keeps what it prints.
func Start(t testing.TB, c *exec.Cmd) *Terminal {
	t.Helper()
	tty, err := pty.Start(c)
	if err != nil {
		t.Skipf("no pty here: %v", err)
	}
	tm := &Terminal{t: t, cmd: c, tty: tty, out: &testutil.SyncBuffer{}, read: make(chan struct{})}
	go func() {
		defer close(tm.read)
		io.Copy(tm.out, tty) // until the terminal closes (EIO once the process is gone)
	}()
	t.Cleanup(func() {
		c.Process.Kill()
		tty.Close()
	})
	return tm
}

// Output is what the terminal showed so far, line ends as \n.
func (tm *Terminal) Output() string { return strings.ReplaceAll(tm.out.String(), "\r\n", "\n") }

// WaitFor waits until the terminal shows s, failing the test after within.
func (tm *Terminal) WaitFor(s string, within time.Duration) {
	tm.t.Helper()
	real := clock.Real{} // a test's deadline is real time
	for deadline := real.Now().Add(within); !strings.Contains(tm.out.String(), s); {
		if real.Now().After(deadline) {
			tm.t.Fatalf("no %q on the terminal within %s:\n%s", s, within, tm.Output())
		}
		<-real.After(20 * time.Millisecond)
	}
}

// CtrlC types the terminal's interrupt character: the line discipline
// sends SIGINT to the foreground process group.
func (tm *Terminal) CtrlC() { tm.tty.Write([]byte{3}) }

// Wait waits for the command to end (failing the test after within) and
// returns its exit code and everything it showed.
func (tm *Terminal) Wait(within time.Duration) (int, string) {
	tm.t.Helper()
	done := make(chan error, 1)
	go func() { done <- tm.cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-clock.Real{}.After(within):
		tm.cmd.Process.Kill()
		tm.t.Fatalf("%v on a terminal never finished:\n%s", tm.cmd.Args, tm.Output())
	}
	select {
	case <-tm.read:
	case <-clock.Real{}.After(2 * time.Second):
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), tm.Output()
	}
	return 0, tm.Output()
}
