package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sandboxforge/sbf/internal/readcount"
	"github.com/sandboxforge/sbf/spec"
)

// `sbf apply` reads its workspace once, as an MCP request does
// (mcpserver/loads_test.go): one resolve, one spec load, one read of the
// overrides and of the state, one listing of the backend before planning
// and, after a run that made VMs, one look at what they became (never a
// second listing); the host's cap counts once while its ledger is new.
func TestApplyReadsItsWorkspaceOnce(t *testing.T) {
	root := t.TempDir()
	write(t, filepath.Join(root, spec.FileName), simSpec)
	env := map[string]string{"SBF_STATE_HOME": filepath.Join(root, "host")}
	for _, step := range []struct {
		what    string
		inspect int64
	}{{"creating two sandboxes", 1}, {"a converged workspace", 0}} {
		before := readcount.Now()
		if r := sbf(t, env, "-C", root, "apply", "--auto-approve"); r.code != 0 {
			t.Fatalf("%s: %s", step.what, r.stderr)
		}
		got := readcount.Now().Since(before)
		for k, most := range map[readcount.Kind]int64{readcount.Resolve: 1, readcount.SpecLoad: 1,
			readcount.Overrides: 1, readcount.State: 1, readcount.Index: 1, readcount.List: 1, readcount.Inspect: step.inspect,
			readcount.ListCap: 1, readcount.Policy: 0} {
			if got.Of(k) > most {
				t.Errorf("%s read %s %d times, want at most %d (%v)", step.what, k, got.Of(k), most, got)
			}
		}
	}
}

// A failed create is undone within its run, as a plan of its own: the
// run holds the sandbox and what it read, so the undoing reads the
// workspace no second time (no second load, state read or listing: the
// second converge it replaced did each again). Its edit reads the
// overrides the run wrote once, under their lock, as every edit does.
func TestAFailedUpIsUndoneWithoutReadingAgain(t *testing.T) {
	root := t.TempDir()
	write(t, filepath.Join(root, spec.FileName), "[vm]\ndriver = \"sim\"\n")
	env := map[string]string{"SBF_STATE_HOME": filepath.Join(root, "host"), "SBF_SIM_FAULTS": "create:*=fail"}
	before := readcount.Now()
	if r := sbf(t, env, "-C", root, "up", "--auto-approve", "--new", "scratch"); r.code != 1 ||
		!strings.Contains(r.stderr, "scratch") {
		t.Fatalf("a create that fails: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	got := readcount.Now().Since(before)
	for k, most := range map[readcount.Kind]int64{readcount.Resolve: 1, readcount.SpecLoad: 1,
		readcount.Overrides: 2, readcount.State: 1, readcount.List: 1} {
		if got.Of(k) > most {
			t.Errorf("a failed up read %s %d times, want at most %d (%v)", k, got.Of(k), most, got)
		}
	}
	if data, _ := os.ReadFile(filepath.Join(root, spec.Dir, "overrides.toml")); strings.Contains(string(data),
		"[leases.scratch]") {
		t.Errorf("the failed sandbox keeps its lease:\n%s", data)
	}
}

// A create whose VM was made but failed to start is undone too: its VM is
// deleted, its lease dropped, and the next up makes it anew.
func TestAnUpWhoseStartFailedLeavesNoVM(t *testing.T) {
	w := newSimWorkspace(t, "[vm]\ndriver = \"sim\"\n")
	if r := w.run([]string{"SBF_SIM_FAULTS=start:*=fail"}, "up", "--auto-approve", "--new", "scratch"); r.code != 1 {
		t.Fatalf("a start that fails: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if got := w.world(); len(got) != 0 {
		t.Errorf("the VM whose start failed was left: %v", got)
	}
	if r := w.run(nil, "up", "--auto-approve", "--new", "scratch"); r.code != 0 || len(w.world()) != 1 {
		t.Errorf("the next up: exit %d, world %v\n%s", r.code, w.world(), r.stderr)
	}
}
