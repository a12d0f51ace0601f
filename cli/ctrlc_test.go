package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sandboxforge/sbf/internal/clock"
	"github.com/sandboxforge/sbf/internal/testutil/pseudoterm"
	"github.com/sandboxforge/sbf/state"
)

// heldBoot is a sim boot held in its child process until the test lets it
// end: a Ctrl-C typed while it runs lands while it runs, however slowly a
// loaded machine schedules the test (a two-second boot once ended before
// the Ctrl-C on CI). env is the sim's environment; started waits until the
// child runs; release lets it end.
type heldBoot struct {
	t         *testing.T
	env       []string
	started   string
	releasing string
}

func newHeldBoot(t *testing.T) *heldBoot {
	dir := t.TempDir()
	b := &heldBoot{t: t, started: filepath.Join(dir, "started"), releasing: filepath.Join(dir, "release")}
	tool := filepath.Join(dir, "boot")
	script := "#!/bin/sh\n: > " + b.started + "\nwhile [ ! -e " + b.releasing + " ]; do sleep 0.05; done\n"
	if err := os.WriteFile(tool, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	b.env = []string{"SBF_SIM_TOOL=" + tool, "SBF_SIM_LATENCY=start=1s"}
	return b
}

// waitStarted waits until the boot's child process runs.
func (b *heldBoot) waitStarted() {
	b.t.Helper()
	real := clock.Real{}
	for deadline := real.Now().Add(30 * time.Second); ; <-real.After(20 * time.Millisecond) {
		if _, err := os.Stat(b.started); err == nil {
			return
		}
		if real.Now().After(deadline) {
			b.t.Fatal("the held boot never started")
		}
	}
}

// release lets the boot end.
func (b *heldBoot) release() {
	if err := os.WriteFile(b.releasing, nil, 0o644); err != nil {
		b.t.Fatal(err)
	}
}

// A terminal sends Ctrl-C to its whole foreground process group, not to
// sbf alone (issue 40): these tests type it on a real pseudo-terminal,
// against the sim with its waits in a child process (SBF_SIM_TOOL=sleep),
// as a backend's CLI (limactl) is one.
func TestCtrlCAtATerminalFinishesTheStepsInFlight(t *testing.T) {
	w := newSimWorkspace(t, "[vm]\ndriver = \"sim\"\n[sandboxes.a]\n[sandboxes.b]\n[sandboxes.c]\n")
	boot := newHeldBoot(t)
	tm := pseudoterm.Start(t, w.cmd(boot.env, "apply", "--auto-approve", "--parallelism", "1"))
	boot.waitStarted() // the start (the boot) is in flight, in its child
	tm.CtrlC()
	tm.WaitFor("Interrupt received", 30*time.Second)
	boot.release()
	code, out := tm.Wait(60 * time.Second)
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
	// Looking instances up takes time, as limactl's does: a look made with
	// the cancelled run's context fails, and must not hide the VM from the
	// undoing.
	tm := pseudoterm.Start(t, w.cmd([]string{"SBF_SIM_TOOL=sleep",
		"SBF_SIM_LATENCY=start=60s,inspect=200ms,list=200ms"}, "apply", "--auto-approve"))
	tm.WaitFor(": create...", 30*time.Second)
	time.Sleep(700 * time.Millisecond) // the create is done, the start (the boot) is in flight
	tm.CtrlC()
	tm.WaitFor("Interrupt received", 10*time.Second)
	tm.CtrlC()
	code, out := tm.Wait(60 * time.Second)
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
