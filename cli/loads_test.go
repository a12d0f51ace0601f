package cli

import (
	"path/filepath"
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
