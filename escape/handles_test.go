package escape

import (
	"strings"
	"testing"
)

// Issue 39, point 3 and two findings of its point 6, over HTTP (the one
// transport where clients share a server): a second client whose MCP roots
// left out the owner's workspace (its instance read as INSTANCE_NOT_FOUND)
// wrote a command into the owner's exec session — the sim ran it on this
// host, in the canary folder — read it, signalled and closed it; its
// tasks/cancel stopped the owner's create running as an MCP task; it
// subscribed to the owner's workspace resource and to host files; a client
// whose roots/list failed could work the session too; and the owner's
// sessions took every place of the server's cap. Now each is refused in
// the words an id that never existed gets, the owner's session and task
// carry on, and the cap is per workspace.
func TestHandlesAnswerOnlyTheirWorkspace(t *testing.T) {
	t.Parallel()
	w := newWorld(t, "[vm]\ndriver = \"sim\"\n")
	w.write("ws/a/.sandboxforge.toml", "[vm]\ndriver = \"sim\"\n")
	sim := []string{"SBF_ENABLE_SIM=1", "SBF_MAX_EXEC_SESSIONS=1", "SBF_SIM_LATENCY=create=2s"}
	url := w.serve(sim)
	c := tsNode(t, "handles.mjs")
	c.Env = append(append([]string{}, w.env...), "ESC_TARGET="+url, "ESC_TOKEN="+w.token, "ESC_WS="+w.ws,
		"ESC_CANARY="+w.canary)
	out, err := c.CombinedOutput()
	if err != nil || !strings.Contains(string(out), `"ok":true`) {
		t.Fatalf("handles.mjs: %v\n%.4000s", err, out)
	}
	if w.exists("canary/pwned-by-session") {
		t.Error("another workspace's client ran a command in the owner's session")
	}
}
