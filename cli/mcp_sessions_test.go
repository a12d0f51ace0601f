//go:build unix

package cli

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// The official TypeScript SDK drives exec sessions (issue 31) on the sim
// driver over stdio: mcpserver/testdata/tsclient/sessions.mjs holds the
// calls and their assertions (python3 -i, written to and read with a
// cursor, closed; a signalled shell command).
func TestTypeScriptSDKExecSessions(t *testing.T) {
	t.Parallel() // subprocesses and waits: it overlaps with the others
	w := newSimWorkspace(t, "[vm]\ndriver = \"sim\"\n")
	c := exec.Command("node", "sessions.mjs", "stdio", sbfBinary, w.root)
	c.Dir = ensureTSClient(t)
	c.Env = append(slices.Clone(w.env), "SBF_SIM_WORLD="+w.simDir())
	out, err := c.CombinedOutput()
	if err != nil || !strings.Contains(string(out), `"ok":true`) {
		t.Fatalf("TypeScript SDK exec sessions: %v\n%s", err, out)
	}
	t.Logf("%s", out)
}
