//go:build e2e

package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// agent runs one step of mcpserver/testdata/tsclient/agent.mjs: what an
// agent does through the official TypeScript SDK (a client no one here
// wrote) against `sbf mcp` on this workspace, with mcpArgs for the server.
// It returns the step's JSON summary; a failed step fails the test.
func (w *ws) agent(t *testing.T, step, arg string, mcpArgs ...string) map[string]any {
	t.Helper()
	dir := os.Getenv("SBF_E2E_TSCLIENT")
	if dir == "" {
		t.Fatal("SBF_E2E_TSCLIENT is not set: run the suite with make e2e")
	}
	c := exec.Command("node", "agent.mjs", step, os.Getenv("SBF_BIN"), w.root, arg)
	c.Dir = dir
	c.Env = append(append(os.Environ(), w.env...), "SBF_MCP_ARGS="+strings.Join(mcpArgs, " "))
	// The summary is the script's last line on stdout; the server it spawned
	// writes its own progress to stderr, which may come after it.
	var stderr strings.Builder
	c.Stderr = &stderr
	out, err := c.Output()
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	var summary map[string]any
	if err != nil || json.Unmarshal([]byte(lines[len(lines)-1]), &summary) != nil || summary["ok"] != true {
		t.Fatalf("agent %s through the TypeScript SDK: %v\n%s\nstderr:\n%s", step, err, out, stderr.String())
	}
	t.Logf("agent %s: %v", step, summary)
	return summary
}

// mcpArgsJSON is a tool's arguments as agent.mjs takes them.
func mcpArgsJSON(t *testing.T, args map[string]any) string {
	t.Helper()
	b, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
