//go:build unix

package cli

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// An agent's long call through the official TypeScript SDK over stdio: a
// 6 s boot against a 3 s request timeout succeeds when the client lets
// progress reset the timeout (the server beats every second here), times
// out when it does not, and runs to its result as an MCP task.
// mcpserver/testdata/tsclient/longcalls.mjs holds the calls.
func TestTypeScriptSDKLongCallsReportProgressAndRunAsTasks(t *testing.T) {
	t.Parallel() // a subprocess and real waits: it overlaps with the others
	w := newSimWorkspace(t, "[vm]\ndriver = \"sim\"\n[lease]\nmax_instances = 5\n")
	c := exec.Command("node", "longcalls.mjs", "stdio", sbfBinary, w.root)
	c.Dir = ensureTSClient(t)
	c.Env = append(slices.Clone(w.env), "SBF_SIM_LATENCY=create=6s", "MCP_PROGRESS_INTERVAL_SECONDS=1",
		"TIMEOUT_MS=3000")
	out, err := c.CombinedOutput()
	if err != nil || !strings.Contains(string(out), `"ok":true`) {
		t.Fatalf("long calls through the TypeScript SDK: %v\n%s", err, out)
	}
	t.Logf("%s", out)
}

// An agent's whole flow through the official TypeScript SDK over stdio
// (issue 42): logging at debug, a create with progress and a total, a
// command, the files toolset switched on and a file written and read,
// the destroy, and the log lines of its workspace heard along the way.
// mcpserver/testdata/tsclient/flow.mjs holds the calls.
func TestTypeScriptSDKAgentFlow(t *testing.T) {
	t.Parallel()
	w := newSimWorkspace(t, "[vm]\ndriver = \"sim\"\n")
	c := exec.Command("node", "flow.mjs", sbfBinary, w.root)
	c.Dir = ensureTSClient(t)
	c.Env = slices.Clone(w.env)
	out, err := c.CombinedOutput()
	if err != nil || !strings.Contains(string(out), `"ok":true`) {
		t.Fatalf("an agent's flow through the TypeScript SDK: %v\n%s", err, out)
	}
	t.Logf("%s", out)
}
