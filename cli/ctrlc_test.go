package cli

import (
	"errors"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/sandboxforge/sbf/internal/testutil"
	"github.com/sandboxforge/sbf/state"
)

// A terminal sends Ctrl-C to its whole foreground process group, not to
// sbf alone (issue 40): these tests type it on a real pseudo-terminal,
// against the sim with its waits in a child process (SBF_SIM_TOOL=sleep),
// as a backend's CLI (limactl) is one.
func TestCtrlCAtATerminalFinishesTheStepsInFlight(t *testing.T) {
	w := newSimWorkspace(t, "[vm]\ndriver = \"sim\"\n[sandboxes.a]\n[sandboxes.b]\n[sandboxes.c]\n")
	tm := startOnTerminal(t, w.cmd([]string{"SBF_SIM_TOOL=sleep", "SBF_SIM_LATENCY=start=2s"},
		"apply", "--auto-approve", "--parallelism", "1"))
	tm.waitFor(": create...", 30*time.Second)
	time.Sleep(300 * time.Millisecond) // the start (the boot) is in flight, in its child
	tm.ctrlC()
	code, out := tm.wait()
	if code != 130 || !strings.Contains(out, "Interrupt received: finishing the steps in flight") {
		t.Fatalf("apply after Ctrl-C at a terminal: exit %d\n%s", code, out)
	}
	running := 0
	for name, rec := range readState(t, w.root).Sandboxes {
		switch rec.Phase {
		case state.Running:
			running++
		case state.Failed, state.Creating:
			t.Errorf("the step in flight did not finish: %s is %s (%s)\n%s", name, rec.Phase, rec.LastError, out)
		}
	}
	if running != 1 || len(w.world()) != 1 {
		t.Errorf("after Ctrl-C: %d recorded running, world %v; want the one in flight", running, w.world())
	}
}

// The second Ctrl-C cancels the create in flight and deletes what it had
// made: no VM is left, recorded failed, to run until someone destroys it.
func TestASecondCtrlCAtATerminalRemovesTheVMItWasMaking(t *testing.T) {
	w := newSimWorkspace(t, "[vm]\ndriver = \"sim\"\n[sandboxes.a]\n")
	tm := startOnTerminal(t, w.cmd([]string{"SBF_SIM_TOOL=sleep", "SBF_SIM_LATENCY=start=60s"},
		"apply", "--auto-approve"))
	tm.waitFor(": create...", 30*time.Second)
	time.Sleep(300 * time.Millisecond) // the create is done, the start (the boot) is in flight
	tm.ctrlC()
	tm.waitFor("Interrupt received", 10*time.Second)
	tm.ctrlC()
	code, out := tm.wait()
	if code != 130 || !strings.Contains(out, "Stopping now") {
		t.Fatalf("after two Ctrl-Cs: exit %d\n%s", code, out)
	}
	if got := w.world(); len(got) != 0 {
		t.Errorf("the VM being made was left: %v\n%s", got, out)
	}
	if r := w.run(nil, "apply", "--auto-approve"); r.code != 0 || len(w.world()) != 1 {
		t.Errorf("the next apply: exit %d, world %v\n%s", r.code, w.world(), r.stderr)
	}
}

// ptyTerm is a command running on a pseudo-terminal, as a person types at it.
type ptyTerm struct {
	t    *testing.T
	cmd  *exec.Cmd
	tty  *os.File
	out  *testutil.SyncBuffer
	read chan struct{}
}

func startOnTerminal(t *testing.T, c *exec.Cmd) *ptyTerm {
	t.Helper()
	tty, err := pty.Start(c)
	if err != nil {
		t.Skipf("no pty here: %v", err)
	}
	tm := &ptyTerm{t: t, cmd: c, tty: tty, out: &testutil.SyncBuffer{}, read: make(chan struct{})}
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

func (tm *ptyTerm) waitFor(s string, within time.Duration) {
	tm.t.Helper()
	for deadline := time.Now().Add(within); !strings.Contains(tm.out.String(), s); {
		if time.Now().After(deadline) {
			tm.t.Fatalf("no %q on the terminal within %s:\n%s", s, within, tm.out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// ctrlC types the terminal's interrupt character: the line discipline
// sends SIGINT to the foreground process group.
func (tm *ptyTerm) ctrlC() { tm.tty.Write([]byte{3}) }

func (tm *ptyTerm) wait() (int, string) {
	tm.t.Helper()
	done := make(chan error, 1)
	go func() { done <- tm.cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(60 * time.Second):
		tm.cmd.Process.Kill()
		tm.t.Fatalf("%v on a terminal never finished:\n%s", tm.cmd.Args, tm.out.String())
	}
	select {
	case <-tm.read:
	case <-time.After(2 * time.Second):
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), strings.ReplaceAll(tm.out.String(), "\r\n", "\n")
	}
	return 0, strings.ReplaceAll(tm.out.String(), "\r\n", "\n")
}
