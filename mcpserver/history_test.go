package mcpserver

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/sandboxforge/sbf/sandbox"
	"github.com/sandboxforge/sbf/spec"
)

// Every call on an instance is in its workspace's history, oldest first,
// with what ran, its exit code and bytes, and never a secret.
func TestHistoryRecordsCallsRedacted(t *testing.T) {
	f := newFixture(t, canarySpec)
	id := f.ok("create_instance", map[string]any{"workspace_root": f.root, "ttl_minutes": 10})["instance_id"].(string)
	f.ok("run_command", map[string]any{"instance_id": id, "command": "echo " + canary + "-pw; exit 3",
		"env": map[string]any{"API_TOKEN": canary + "-env"}})
	f.ok("run_command", map[string]any{"instance_id": id,
		"command": "curl mysql://root:" + canary + "-other@db/app"})
	f.ok("write_file", map[string]any{"instance_id": id, "path": "notes.txt", "content": canary + "-content"})
	f.fails("read_file", map[string]any{"instance_id": id, "path": "missing.txt"}, "GUEST_PATH_NOT_FOUND")
	f.fails("read_file", map[string]any{"instance_id": "inst_00000000", "path": "x"}, "INSTANCE_NOT_FOUND")

	h := f.ok("get_history", map[string]any{"instance_id": id})
	if text := mustJSON(h); strings.Contains(text, canary) {
		t.Fatalf("the history shows a secret: %s", text)
	}
	var tools []string
	events := h["events"].([]any)
	for _, e := range events {
		tools = append(tools, e.(map[string]any)["tool"].(string))
	}
	if strings.Join(tools, " ") != "create_instance run_command run_command write_file read_file" {
		t.Fatalf("recorded %v", tools)
	}
	run := events[1].(map[string]any)
	if run["command"] != "echo ***; exit 3" || run["exit_code"].(float64) != 3 || run["door"] != "mcp" ||
		run["detail"] != "env=API_TOKEN" || run["bytes"].(float64) != float64(len(canary)+4) || run["instance_id"] != id {
		t.Errorf("run_command event: %v", run)
	}
	if c := events[2].(map[string]any)["command"]; c != "curl mysql://root:***@db/app" {
		t.Errorf("a URL's password: %v", c)
	}
	if w := events[3].(map[string]any); w["path"] != "notes.txt" || w["bytes"].(float64) != float64(len(canary)+8) {
		t.Errorf("write_file event: %v", w)
	}
	if r := events[4].(map[string]any); r["error_code"] != "GUEST_PATH_NOT_FOUND" {
		t.Errorf("failed read_file event: %v", r)
	}
	if h := f.ok("get_history", map[string]any{"limit": 2}); h["count"].(float64) != 2 ||
		h["events"].([]any)[1].(map[string]any)["tool"] != "read_file" {
		t.Errorf("the newest two: %v", h)
	}
	f.fails("get_history", map[string]any{"limit": 0}, "INVALID_ARGUMENTS")
}

// A call refused because the server does not serve the instance's
// workspace writes nothing there, history included.
func TestHistoryIsNotWrittenWhereTheServerMayNotGo(t *testing.T) {
	f := newFixture(t, simSpec)
	other := filepath.Join(t.TempDir(), "other")
	os.MkdirAll(other, 0o755)
	os.WriteFile(filepath.Join(other, spec.FileName), []byte(simSpec), 0o644)
	id := f.ok("create_instance", map[string]any{"workspace_root": other})["instance_id"].(string)
	history := filepath.Join(other, spec.Dir, sandbox.HistoryFile)
	before, _ := os.ReadFile(history)
	req := mcp.CallToolRequest{}
	req.Params.Name = "run_command"
	req.Params.Arguments = map[string]any{"instance_id": id, "command": "echo hi"}
	res, err := narrowClient(t, f).CallTool(context.Background(), req)
	// Answered as an unknown id is (issue 29): neither where it lives nor that it exists.
	if err != nil || !res.IsError || !strings.Contains(mustJSON(res), "INSTANCE_NOT_FOUND") ||
		strings.Contains(mustJSON(res), other) {
		t.Fatalf("run_command in a workspace not served: %v %v", mustJSON(res), err)
	}
	req.Params.Arguments = map[string]any{"instance_id": "inst_00000000", "command": "echo hi"}
	unknown, _ := narrowClient(t, f).CallTool(context.Background(), req)
	if a, b := mustJSON(res.StructuredContent), strings.ReplaceAll(mustJSON(unknown.StructuredContent),
		"inst_00000000", id); a != b {
		t.Errorf("an instance not served and an unknown one are told apart:\n%s\n%s", a, b)
	}
	if after, _ := os.ReadFile(history); string(after) != string(before) {
		t.Errorf("the refused call was recorded in %s:\n%s", history, after)
	}
}
