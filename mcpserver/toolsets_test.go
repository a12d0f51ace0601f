package mcpserver

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// v1ToolNames are SandboxForge v1's 25 tools (../shared/reference).
var v1ToolNames = []string{"create_instance", "list_instances", "destroy_instance", "extend_instance_ttl",
	"validate_workspace_config", "prepare_workspace", "run_command", "copy_to_instance", "copy_from_instance",
	"sync_workspace_to_instance", "sync_instance_to_workspace", "collect_artifacts", "start_background_task",
	"get_task_status", "get_task_logs", "stop_task", "docker_build", "docker_run", "docker_exec", "docker_logs",
	"docker_compose", "docker_ps", "docker_images", "docker_cleanup", "validate_image"}

// listAs is tools/list as a session (nil: none) receives it: the tool
// names and the answer's bytes as compact JSON, as a transport sends it.
func (f *fixture) listAs(c *caller) (names []string, size int) {
	f.t.Helper()
	ctx := context.Background()
	if c != nil {
		ctx = f.srv.MCP().WithContext(ctx, c)
	}
	raw, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
	out, err := json.Marshal(f.srv.MCP().HandleMessage(ctx, raw))
	var resp struct {
		Result struct{ Tools []struct{ Name string } }
	}
	if err != nil || json.Unmarshal(out, &resp) != nil {
		f.t.Fatalf("tools/list: %v %s", err, out)
	}
	for _, t := range resp.Result.Tools {
		names = append(names, t.Name)
	}
	return names, len(out)
}

// By default tools/list holds the core tools and every v1 tool, within
// issue 42's budget of 32 KB as compact JSON, as a transport sends it;
// "all" holds every tool within 64 KB (30.4 KB and 62.6 KB in November
// 2026). A tool left out of the list still answers its name.
func TestDefaultToolsetsKeepTheListSmall(t *testing.T) {
	f := newFixture(t, simSpec)
	all, allBytes := f.listAs(nil)
	f.start(Settings{SweepInterval: time.Minute, Session: "local", Toolsets: []string{ToolsetsDefault}})
	def, defBytes := f.listAs(nil)
	t.Logf("tools/list: default %d tools, %d bytes; all %d tools, %d bytes", len(def), defBytes, len(all), allBytes)
	for _, name := range append(slices.Clone(v1ToolNames), "run_ephemeral", "enable_toolset") {
		if !slices.Contains(def, name) {
			t.Errorf("the default list lacks %s", name)
		}
	}
	if slices.Contains(def, "read_file") || slices.Contains(def, "snapshot_instance") || len(all) < 58 {
		t.Errorf("default %v; all %d tools", def, len(all))
	}
	if defBytes > 32000 || allBytes > 64000 {
		t.Errorf("tools/list is %d bytes by default (budget 32 KB), %d with all (64 KB)", defBytes, allBytes)
	}
	id := f.ok("create_instance", map[string]any{"workspace_root": f.root, "auto_bootstrap": false})["instance_id"]
	f.ok("write_file", map[string]any{"instance_id": id, "path": "unlisted.txt", "content": "still callable"})
}

// A session switches a toolset on with enable_toolset: its list grows and
// it is told so; another session's list stays as the operator chose.
func TestEnableToolsetListsMoreForItsSession(t *testing.T) {
	f := newFixture(t, simSpec)
	f.start(Settings{SweepInterval: time.Minute, Session: "local", Toolsets: []string{"core"}})
	a, b := f.caller("a"), f.caller("b")
	for _, c := range []*caller{a, b} {
		if err := f.srv.MCP().RegisterSession(context.Background(), c); err != nil {
			t.Fatal(err)
		}
	}
	before, _ := f.listAs(a)
	if slices.Contains(before, "read_file") || slices.Contains(before, "docker_ps") ||
		!slices.Contains(before, "enable_toolset") || !slices.Contains(before, "run_command") {
		t.Fatalf("core lists %v", before)
	}
	out, isErr := f.toolAs(a, "enable_toolset", nil)
	if isErr || len(out["toolsets"].([]any)) != len(toolsetGroups) {
		t.Fatalf("enable_toolset without a toolset: %v", out)
	}
	out, isErr = f.toolAs(a, "enable_toolset", map[string]any{"toolset": "files"})
	if isErr {
		t.Fatalf("enable_toolset files: %v", out)
	}
	for _, row := range out["toolsets"].([]any) {
		r := row.(map[string]any)
		if want := r["name"] == "files" || r["name"] == "core"; r["listed"] != want {
			t.Errorf("after files: %v", r)
		}
	}
	select {
	case n := <-a.notes:
		if n.Method != mcp.MethodNotificationToolsListChanged {
			t.Errorf("notification %s", n.Method)
		}
	default:
		t.Error("no notifications/tools/list_changed")
	}
	after, _ := f.listAs(a)
	if !slices.Contains(after, "read_file") || !slices.Contains(after, "copy_to_instance") ||
		slices.Contains(after, "docker_ps") {
		t.Errorf("after enabling files: %v", after)
	}
	if other, _ := f.listAs(b); !slices.Equal(other, before) {
		t.Errorf("another session lists %v", other)
	}
	if out, isErr := f.toolAs(a, "enable_toolset", map[string]any{"toolset": "everything"}); !isErr ||
		out["error_code"] != "INVALID_ARGUMENTS" {
		t.Errorf("an unknown toolset: %v", out)
	}
	// A session the server never registered (a 2026-07-28 request over
	// HTTP) keeps no list: it is told so, and nothing is kept for it.
	if out, isErr := f.toolAs(f.caller("unregistered"), "enable_toolset", map[string]any{"toolset": "files"}); !isErr ||
		!strings.Contains(out["message"].(string), "no session") {
		t.Errorf("an unregistered session: %v", out)
	}
	// A session that ended is forgotten.
	f.srv.MCP().UnregisterSession(context.Background(), "a")
	f.srv.listing.mu.Lock()
	_, kept := f.srv.listing.sessions["a"]
	kept = kept || f.srv.listing.registered["a"] || len(f.srv.listing.sessions) != 0
	f.srv.listing.mu.Unlock()
	if kept {
		t.Error("a session's toolsets are kept after its end")
	}
}

// The operator's toolsets are checked where they are read.
func TestToolsetNamesAreChecked(t *testing.T) {
	if got, err := ParseToolsets(" Files, default ,,docker"); err != nil || !slices.Equal(got,
		[]string{"files", "default", "docker"}) {
		t.Errorf("ParseToolsets: %v %v", got, err)
	}
	if _, err := ParseToolsets("files,nope"); err == nil || !strings.Contains(err.Error(), `unknown toolset "nope"`) {
		t.Errorf("an unknown toolset: %v", err)
	}
	env := map[string]string{"SBF_TOOLSETS": "all"}
	if s, err := ReadSettings(func(k string) string { return env[k] }); err != nil || !slices.Equal(s.Toolsets,
		[]string{"all"}) {
		t.Errorf("SBF_TOOLSETS=all: %v %v", s.Toolsets, err)
	}
	env["SBF_TOOLSETS"] = "v2"
	if _, err := ReadSettings(func(k string) string { return env[k] }); err == nil ||
		!strings.Contains(err.Error(), "SBF_TOOLSETS") {
		t.Errorf("SBF_TOOLSETS=v2: %v", err)
	}
}
