//go:build e2e

package e2e

import (
	"github.com/sandboxforge/sbf/internal/testutil/pseudoterm"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// onTerminal starts sbf in the workspace on a pseudo-terminal, as a person
// types it (issue 40: a terminal's Ctrl-C reaches the whole foreground
// process group, limactl included unless sbf keeps it out).
func (w *ws) onTerminal(args ...string) *pseudoterm.Terminal {
	c := exec.Command(os.Getenv("SBF_BIN"), append([]string{"-C", w.root}, args...)...)
	c.Env = append(append(os.Environ(), w.env...), "TERM=dumb")
	return pseudoterm.Start(w.t, c)
}

// applyThroughCtrlC is the suite's first apply, on a terminal, with one
// Ctrl-C typed while the VM boots: the create in flight must finish and be
// recorded, and sbf exit 130.
func applyThroughCtrlC(t *testing.T, w *ws) {
	start := time.Now()
	tm := w.onTerminal("apply", "--auto-approve")
	tm.WaitFor("api: create...", 2*time.Minute)
	time.Sleep(20 * time.Second) // limactl start is booting the VM
	tm.CtrlC()
	tm.WaitFor("Interrupt received: finishing the steps in flight", 30*time.Second)
	code, out := tm.Wait(25 * time.Minute)
	record("sbf apply on a terminal, Ctrl-C during the boot (it finishes)", start)
	t.Log(out)
	if code != 130 || !strings.Contains(out, "api: create done") {
		t.Fatalf("apply with a Ctrl-C during the boot: exit %d, want 130 with the create done", code)
	}
}

// testSecondCtrlC types Ctrl-C twice while a second workspace's VM boots:
// the create is cancelled and the VM it was making deleted, not left
// booting, recorded failed, until someone destroys it.
func testSecondCtrlC(t *testing.T) {
	w := &ws{t: t, root: t.TempDir(), env: []string{"SBF_STATE_HOME=" + t.TempDir()}}
	w.write(".sandboxforge.toml", strings.Replace(specText(1, false), "[sandboxes.api]\nports = [\"18080:80\"]",
		"[sandboxes.gone]", 1))
	t.Cleanup(func() { w.sbf("", nil, "destroy", "--auto-approve") })
	start := time.Now()
	tm := w.onTerminal("apply", "--auto-approve")
	tm.WaitFor("gone: create...", 2*time.Minute)
	time.Sleep(15 * time.Second)
	tm.CtrlC()
	tm.WaitFor("Interrupt received", 30*time.Second)
	tm.CtrlC()
	code, out := tm.Wait(5 * time.Minute)
	record("sbf apply on a terminal, two Ctrl-Cs during the boot (the VM is deleted)", start)
	t.Log(out)
	if code != 130 || !strings.Contains(out, "Stopping now") {
		t.Errorf("apply after two Ctrl-Cs: exit %d", code)
	}
	if list := limactl(t, "list", "--quiet"); strings.Contains(list, "-gone") {
		t.Errorf("the VM the cancelled create was making is still there:\n%s", list)
	}
}
