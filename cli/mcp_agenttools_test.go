//go:build unix

package cli

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// The official TypeScript SDK drives the tools of issue 24 on the sim
// driver, over stdio and over HTTP: mcpserver/testdata/tsclient/
// agenttools.mjs holds the calls and their assertions.

func TestTypeScriptSDKAgentToolsOverStdio(t *testing.T) {
	t.Parallel() // subprocesses and waits: it overlaps with the others
	ensureTSClient(t)
	w := newSimWorkspace(t, agentToolsSpec)
	token := filepath.Join(t.TempDir(), "token")
	write(t, token, "agent-tools-token-of-the-cli-tests\n")
	os.Chmod(token, 0o600) // sbf refuses a token file others may read
	runAgentTools(t, w, "stdio", sbfBinary, freeLoopback(t), token)
}

func TestTypeScriptSDKAgentToolsOverHTTP(t *testing.T) {
	t.Parallel() // subprocesses and waits: it overlaps with the others
	ensureTSClient(t)
	w := newSimWorkspace(t, agentToolsSpec)
	metrics := freeLoopback(t)
	served, _ := startStoppableServe(t, w, "--metrics", metrics)
	runAgentTools(t, w, "http", served.URL, metrics, served.TokenFile)
}

// agentToolsSecret is planted in the spec; the history must not show it.
const agentToolsSecret = "ts-S3cret-Zq9"

const agentToolsSpec = "[vm]\ndriver = \"sim\"\n[infra.mysql]\nroot_password = \"" + agentToolsSecret + "\"\n"

// runAgentTools runs agenttools.mjs; over stdio the server it starts
// serves metrics at metrics, over HTTP the test's server does; either
// wants the bearer token in tokenFile.
func runAgentTools(t *testing.T, w *simWorkspace, mode, target, metrics, tokenFile string) {
	t.Helper()
	c := exec.Command("node", "agenttools.mjs", mode, target, w.root, metrics)
	c.Dir = ensureTSClient(t)
	c.Env = append(slices.Clone(w.env), "SBF_SIM_WORLD="+w.simDir(), "SBF_TS_SECRET="+agentToolsSecret,
		"SBF_TOKEN_FILE="+tokenFile)
	start := time.Now()
	out, err := c.CombinedOutput()
	if err != nil || !strings.Contains(string(out), `"ok":true`) {
		t.Fatalf("TypeScript SDK agent tools over %s: %v\n%s", mode, err, out)
	}
	t.Logf("over %s: %s", mode, time.Since(start).Round(time.Millisecond))
}

// freeLoopback is a loopback address nothing listens on.
func freeLoopback(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}
