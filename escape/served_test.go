package escape

import (
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// Issue 39, point 1: `sbf serve` and `sbf mcp` served the folder they were
// started in (the doors added -C .) even when the operator named only
// --workspace-root, and a service unit starts in $HOME or /: a client
// wrote into that folder and read from it. Now a server with nothing
// named refuses to start, and one started in an unrelated folder serves
// only what it was told.
func TestAServerServesOnlyWhatTheOperatorNamed(t *testing.T) {
	t.Parallel()
	sim := []string{"SBF_ENABLE_SIM=1"}
	t.Run("nothing named", func(t *testing.T) {
		w := newWorld(t, "[vm]\ndriver = \"sim\"\n")
		for _, args := range [][]string{{"mcp"}, {"serve", "127.0.0.1:0"}, {"mcp", "--http", "127.0.0.1:0"}} {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			c := exec.CommandContext(ctx, sbfBinary, args...)
			c.Dir, c.Env = w.canary, append(append([]string{}, w.env...), sim...)
			out, err := c.CombinedOutput()
			cancel()
			if err == nil || !contains(string(out), "serves only the workspaces you name") {
				t.Errorf("sbf %s started in an unnamed folder: %v\n%s", strings.Join(args, " "), err, out)
			}
		}
	})
	t.Run("a root named, started elsewhere", func(t *testing.T) {
		w := newWorld(t, "[vm]\ndriver = \"sim\"\n")
		c := startedIn(t, w, w.canary, append(w.env, sim...), "mcp", "--workspace-root", w.ws)
		for _, args := range []map[string]any{
			{"workspace_root": w.canary},
			{"workspace_root": filepath.Join(w.canary, "notes")},
		} {
			if code := toolCode(t, c, "create_instance", args); code != "WORKSPACE_NOT_ALLOWED" {
				t.Errorf("create_instance %v: %q, want WORKSPACE_NOT_ALLOWED", args, code)
			}
		}
		// The one root named is the default workspace: a call naming none
		// lands there, never in the folder the server started in.
		if code := toolCode(t, c, "get_desired_state", map[string]any{}); code != "" {
			t.Errorf("get_desired_state with the default workspace: %s", code)
		}
		if w.exists("canary/.sandboxforge") {
			t.Error("the server made state in the folder it started in")
		}
	})
	t.Run("two roots named, none default", func(t *testing.T) {
		w := newWorld(t, "[vm]\ndriver = \"sim\"\n")
		c := startedIn(t, w, w.canary, append(w.env, sim...), "mcp", "--workspace-root", w.ws,
			"--workspace-root", w.other)
		if code := toolCode(t, c, "get_desired_state", map[string]any{}); code != "INVALID_ARGUMENTS" {
			t.Errorf("get_desired_state naming no workspace on a server of two: %q", code)
		}
	})
}

// startedIn starts the real sbf with args over stdio in folder dir, as a
// service manager starts a unit in $HOME, and initialises a client.
func startedIn(t *testing.T, w *world, dir string, env []string, args ...string) *client.Client {
	t.Helper()
	inDir := transport.WithCommandFunc(func(ctx context.Context, cmd string, env, args []string) (*exec.Cmd, error) {
		c := exec.CommandContext(ctx, cmd, args...)
		c.Dir, c.Env = dir, env
		return c, nil
	})
	c, err := client.NewStdioMCPClientWithOptions(sbfBinary, env, args, inDir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: "escape", Version: "1"}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := c.Initialize(ctx, init); err != nil {
		t.Fatal(err)
	}
	return c
}

// toolCode calls a tool and returns its error_code ("" when it succeeded).
func toolCode(t *testing.T, c *client.Client, name string, args map[string]any) string {
	t.Helper()
	req := mcp.CallToolRequest{}
	req.Params.Name, req.Params.Arguments = name, args
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := c.CallTool(ctx, req)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if !res.IsError {
		return ""
	}
	raw, _ := json.Marshal(res.StructuredContent)
	var env struct {
		Code string `json:"error_code"`
	}
	if json.Unmarshal(raw, &env) != nil || env.Code == "" {
		for _, content := range res.Content {
			if text, ok := content.(mcp.TextContent); ok {
				json.Unmarshal([]byte(text.Text), &env)
			}
		}
	}
	return env.Code
}
