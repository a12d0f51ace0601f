//go:build unix

package cli

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"
)

// The official TypeScript SDK drives the tools of issue 24 on the sim
// driver, over stdio and over HTTP: mcpserver/testdata/tsclient/
// agenttools.mjs holds the calls and their assertions.

func TestTypeScriptSDKAgentToolsOverStdio(t *testing.T) {
	ensureTSClient(t)
	w := newSimWorkspace(t, agentToolsSpec)
	runAgentTools(t, w, "stdio", sbfBinary)
}

func TestTypeScriptSDKAgentToolsOverHTTP(t *testing.T) {
	ensureTSClient(t)
	w := newSimWorkspace(t, agentToolsSpec)
	url, _ := startStoppableServe(t, w)
	runAgentTools(t, w, "http", url)
}

// agentToolsSecret is planted in the spec; the history must not show it.
const agentToolsSecret = "ts-S3cret-Zq9"

const agentToolsSpec = "[vm]\ndriver = \"sim\"\n[infra.mysql]\nroot_password = \"" + agentToolsSecret + "\"\n"

func runAgentTools(t *testing.T, w *simWorkspace, mode, target string) {
	t.Helper()
	c := exec.Command("node", "agenttools.mjs", mode, target, w.root)
	c.Dir = tsClientDir
	c.Env = append(slices.Clone(w.env), "SBF_SIM_WORLD="+w.simDir(), "SBF_TS_SECRET="+agentToolsSecret)
	start := time.Now()
	out, err := c.CombinedOutput()
	if err != nil || !strings.Contains(string(out), `"ok":true`) {
		t.Fatalf("TypeScript SDK agent tools over %s: %v\n%s", mode, err, out)
	}
	t.Logf("over %s: %s", mode, time.Since(start).Round(time.Millisecond))
}
