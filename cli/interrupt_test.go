package cli

import (
	"bytes"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sandboxforge/sbf/internal/testutil"
	"github.com/sandboxforge/sbf/state"
)

// Ctrl-C during sbf apply: the create in flight finishes and is recorded,
// the others are not started, sbf says so and exits 130; the next apply
// makes the rest.
func TestCtrlCFinishesTheStepsInFlight(t *testing.T) {
	w := newSimWorkspace(t, "[vm]\ndriver = \"sim\"\n[sandboxes.a]\n[sandboxes.b]\n[sandboxes.c]\n")
	slow := []string{"SBF_SIM_LATENCY=create=1500ms"}
	c := w.cmd(slow, "apply", "--auto-approve", "--parallelism", "1")
	var stdout bytes.Buffer
	var stderr testutil.SyncBuffer
	c.Stdout, c.Stderr = &stdout, &stderr
	startCreating(t, c, &stderr)
	c.Process.Signal(syscall.SIGINT)
	err := c.Wait()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	}
	if code != 130 || !strings.Contains(stderr.String(), "Interrupt received: finishing the steps in flight") {
		t.Fatalf("apply after Ctrl-C: exit %d\n%s%s", code, stdout.String(), stderr.String())
	}
	running := 0
	for _, rec := range readState(t, w.root).Sandboxes {
		if rec.Phase == state.Running {
			running++
		}
		if rec.Phase == state.Creating {
			t.Errorf("a sandbox was left creating: %+v", rec)
		}
	}
	if running != 1 || len(w.world()) != 1 {
		t.Errorf("after Ctrl-C: %d recorded running, world %v; want the one in flight", running, w.world())
	}
	if r := w.run(nil, "apply", "--auto-approve"); r.code != 0 || len(w.world()) != 3 {
		t.Errorf("the next apply: exit %d, world %v\n%s", r.code, w.world(), r.stderr)
	}
}

// A second Ctrl-C stops at once: the create in flight is cancelled, sbf
// exits 130 long before the create would have ended, and the next apply
// repairs what was left.
func TestASecondCtrlCStopsAtOnce(t *testing.T) {
	w := newSimWorkspace(t, "[vm]\ndriver = \"sim\"\n[sandboxes.a]\n")
	c := w.cmd([]string{"SBF_SIM_LATENCY=create=60s"}, "apply", "--auto-approve")
	var stderr testutil.SyncBuffer
	c.Stderr = &stderr
	startCreating(t, c, &stderr)
	start := time.Now()
	c.Process.Signal(syscall.SIGINT)
	for !strings.Contains(stderr.String(), "Interrupt received") && time.Since(start) < 10*time.Second {
		time.Sleep(10 * time.Millisecond)
	}
	c.Process.Signal(syscall.SIGINT)
	err := c.Wait()
	ee, _ := err.(*exec.ExitError)
	if ee == nil || ee.ExitCode() != 130 || time.Since(start) > 30*time.Second ||
		!strings.Contains(stderr.String(), "Stopping now") {
		t.Fatalf("after two Ctrl-Cs: %v after %s\n%s", err, time.Since(start), stderr.String())
	}
	if r := w.run(nil, "apply", "--auto-approve"); r.code != 0 || len(w.world()) != 1 {
		t.Errorf("the next apply: exit %d, world %v\n%s", r.code, w.world(), r.stderr)
	}
}

// startCreating starts an apply and waits until its first create runs.
func startCreating(t *testing.T, c *exec.Cmd, stderr *testutil.SyncBuffer) {
	t.Helper()
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(stderr.String(), ": create..."); {
		if time.Now().After(deadline) {
			c.Process.Kill()
			t.Fatalf("apply never started creating:\n%s", stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}
