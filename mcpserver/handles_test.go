package mcpserver

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/sandboxforge/sbf/drivers/sim"
	"github.com/sandboxforge/sbf/reconcile"
	"github.com/sandboxforge/sbf/spec"
)

// Issue 39, point 3: a handle (exec session, MCP task, subscription) of a
// workspace a client may not use reads as one that never existed.

// anyWorkspace is the scope of a test's own clean-up, which may end any
// session.
func anyWorkspace(string) bool { return true }

// caller is a client session of its own that declared MCP roots: listed
// ones (the server knows them), or none listed and roots/list failing.
type caller struct {
	id    string
	notes chan mcp.JSONRPCNotification
}

func (c *caller) Initialize()                                         {}
func (c *caller) Initialized() bool                                   { return true }
func (c *caller) NotificationChannel() chan<- mcp.JSONRPCNotification { return c.notes }
func (c *caller) SessionID() string                                   { return c.id }
func (c *caller) GetClientInfo() mcp.Implementation                   { return mcp.Implementation{} }
func (c *caller) SetClientInfo(mcp.Implementation)                    {}
func (c *caller) SetClientCapabilities(mcp.ClientCapabilities)        {}
func (c *caller) GetClientCapabilities() mcp.ClientCapabilities {
	return rootedSession{}.GetClientCapabilities()
}

// caller makes a session whose client listed roots (none: it never
// answers roots/list).
func (f *fixture) caller(id string, roots ...string) *caller {
	if roots != nil {
		f.srv.roots.mu.Lock()
		f.srv.roots.seen[id] = roots
		f.srv.roots.mu.Unlock()
	}
	return &caller{id: id, notes: make(chan mcp.JSONRPCNotification, 1024)}
}

// as sends one JSON-RPC request from a caller (nil: a request without a
// session) and returns its result or its error's message.
func (f *fixture) as(c *caller, method string, params map[string]any) (map[string]any, string) {
	f.t.Helper()
	ctx := context.Background()
	if c != nil {
		ctx = f.srv.MCP().WithContext(ctx, c)
	}
	raw, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	out, _ := json.Marshal(f.srv.MCP().HandleMessage(ctx, raw))
	var resp struct {
		Result map[string]any
		Error  *struct{ Message string }
	}
	if err := json.Unmarshal(out, &resp); err != nil {
		f.t.Fatalf("%s: %s", method, out)
	}
	if resp.Error != nil {
		return nil, resp.Error.Message
	}
	return resp.Result, ""
}

// toolAs calls a tool as a caller and decodes its JSON answer.
func (f *fixture) toolAs(c *caller, name string, args map[string]any) (out map[string]any, isError bool) {
	f.t.Helper()
	res, msg := f.as(c, "tools/call", map[string]any{"name": name, "arguments": args})
	if msg != "" {
		f.t.Fatalf("%s: %s", name, msg)
	}
	text := res["content"].([]any)[0].(map[string]any)["text"].(string)
	if err := json.Unmarshal([]byte(text), &out); err != nil {
		f.t.Fatalf("%s: %s", name, text)
	}
	return out, res["isError"] == true
}

// secondWorkspace makes a sim workspace beside the fixture's.
func (f *fixture) secondWorkspace() string {
	root := filepath.Join(filepath.Dir(f.root), "ws2")
	os.MkdirAll(root, 0o755)
	os.WriteFile(filepath.Join(root, spec.FileName), []byte(simSpec), 0o644)
	return root
}

// An exec session answers only callers that may use its workspace: a
// client whose roots leave it out reads, writes, signals and closes
// nothing, in the words an id that never existed gets; a client whose
// roots/list failed gets nothing either; the command got only its owner's
// input. (Before: all four succeeded for anyone holding the id.)
func TestExecSessionsAnswerOnlyTheirWorkspace(t *testing.T) {
	f := newFixture(t, simSpec)
	owner, other, blind := f.caller("owner", f.root), f.caller("other", f.secondWorkspace()), f.caller("blind")
	created, _ := f.toolAs(owner, "create_instance", map[string]any{"workspace_root": f.root})
	started, isErr := f.toolAs(owner, "start_session", map[string]any{"instance_id": created["instance_id"],
		"argv": []any{"cat"}})
	id, _ := started["session_id"].(string)
	if isErr || id == "" {
		t.Fatalf("start_session: %v", started)
	}
	t.Cleanup(func() { f.srv.execSessions.EndAll("test over") })
	// unknown is a tool's answer to a caller, the id asked for written ID.
	unknown := func(c *caller, tool string, args map[string]any) string {
		t.Helper()
		asked := args["session_id"].(string)
		out, isErr := f.toolAs(c, tool, args)
		if !isErr || out["error_code"] != "SESSION_NOT_FOUND" {
			t.Fatalf("want SESSION_NOT_FOUND, got %v", out)
		}
		out["message"] = strings.ReplaceAll(out["message"].(string), asked, "ID")
		out["details"] = strings.ReplaceAll(mustJSON(out["details"]), asked, "ID")
		return mustJSON(out)
	}
	never := unknown(other, "read_session", map[string]any{"session_id": "sess_000000000000"})
	for _, call := range []struct {
		tool string
		args map[string]any
	}{{"write_session", map[string]any{"data": "from elsewhere\n", "close_stdin": true}},
		{"signal_session", map[string]any{"signal": "KILL"}}, {"read_session", map[string]any{}},
		{"close_session", map[string]any{}}} {
		call.args["session_id"] = id
		if got := unknown(other, call.tool, call.args); got != never {
			t.Errorf("%s on another workspace's session: %s\nwant what an unknown id gets: %s", call.tool, got, never)
		}
		if out, isErr := f.toolAs(blind, call.tool, call.args); !isErr || out["error_code"] != "WORKSPACE_NOT_ALLOWED" {
			t.Errorf("%s by a client whose roots/list failed: %v", call.tool, out)
		}
	}
	f.toolAs(owner, "write_session", map[string]any{"session_id": id, "data": "mine\n", "close_stdin": true})
	var got string
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		out, isErr := f.toolAs(owner, "read_session", map[string]any{"session_id": id, "cursor": len(got)})
		if isErr {
			t.Fatalf("the owner's read: %v", out)
		}
		for _, e := range out["events"].([]any) {
			got += e.(map[string]any)["text"].(string)
		}
		if out["done"] == true || time.Now().After(deadline) {
			break
		}
	}
	if got != "mine\n" {
		t.Errorf("the session's command read %q; want only its owner's input", got)
	}
}

// SBF_MAX_EXEC_SESSIONS caps each workspace's sessions: a workspace whose
// client holds all its own leaves another workspace its places. (Before:
// one server-wide cap that one client could fill.)
func TestExecSessionCapIsPerWorkspace(t *testing.T) {
	f := newFixture(t, simSpec)
	f.start(Settings{SweepInterval: time.Minute, Session: "local", MaxExecSessions: 1})
	other := f.secondWorkspace()
	a := f.ok("create_instance", map[string]any{"workspace_root": f.root})["instance_id"]
	b := f.ok("create_instance", map[string]any{"workspace_root": other})["instance_id"]
	f.startSession(map[string]any{"instance_id": a, "argv": []any{"cat"}})
	f.fails("start_session", map[string]any{"instance_id": a, "argv": []any{"cat"}}, "SESSION_LIMIT_EXCEEDED")
	f.startSession(map[string]any{"instance_id": b, "argv": []any{"cat"}})
}

// An MCP task answers only the session that made it: another client's
// tasks/cancel neither stops its work nor says it exists, and a request
// without a session (mcp-go skips its session check for those) neither
// sees it listed nor reads it. (Before: the cancel stopped the owner's
// create, and a session-less tasks/list listed every task.)
func TestMCPTasksAnswerOnlyTheirOwner(t *testing.T) {
	f := newFixture(t, simSpec)
	f.srv.cfg.Engine.Drivers = func(string, *spec.Resolved) (reconcile.Driver, error) {
		return sim.New(sim.Options{Dir: f.simDir, Clock: f.clock, Latency: "create=30s"})
	}
	owner, other := f.caller("owner", f.root), f.caller("other", f.secondWorkspace())
	created, msg := f.as(owner, "tools/call", map[string]any{"name": "create_instance",
		"arguments": map[string]any{"workspace_root": f.root}, "task": map[string]any{}})
	if msg != "" {
		t.Fatal(msg)
	}
	id := created["task"].(map[string]any)["taskId"].(string)
	for deadline := time.Now().Add(10 * time.Second); f.clock.Waiters() == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the create task did not start")
		}
	}
	_, never := f.as(other, "tasks/get", map[string]any{"taskId": "00000000-0000-0000-0000-000000000000"})
	for _, c := range []*caller{other, nil} {
		for _, method := range []string{"tasks/cancel", "tasks/get"} {
			if _, msg := f.as(c, method, map[string]any{"taskId": id}); msg == "" || msg != never {
				t.Errorf("%s of another's task: %q; want what an unknown id gets: %q", method, msg, never)
			}
		}
		if res, _ := f.as(c, "tasks/list", nil); strings.Contains(mustJSON(res), id) {
			t.Errorf("tasks/list lists another's task: %v", res)
		}
	}
	for range 5000 {
		got, msg := f.as(owner, "tasks/get", map[string]any{"taskId": id})
		if msg != "" || got["status"] != "working" {
			res, msg := f.as(owner, "tasks/result", map[string]any{"taskId": id})
			if out, _ := res["structuredContent"].(map[string]any); got["status"] != "completed" ||
				res["isError"] == true || out["status"] != "running" {
				t.Fatalf("the owner's task: %v %v %s", got, res, msg)
			}
			return
		}
		if f.clock.Waiters() > 0 {
			f.clock.Advance(10 * time.Second)
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatal("the owner's task is still working")
}

// The operator sets both session caps; the server's table gets them.
func TestExecSessionCapsComeFromTheEnvironment(t *testing.T) {
	env := map[string]string{"SBF_MAX_EXEC_SESSIONS": "2", "SBF_MAX_EXEC_SESSIONS_TOTAL": "5"}
	s, err := ReadSettings(func(k string) string { return env[k] })
	if err != nil || s.MaxExecSessions != 2 || s.MaxExecSessionsTotal != 5 {
		t.Fatalf("settings %+v: %v", s, err)
	}
	f := newFixture(t, simSpec)
	f.start(s)
	if got := f.srv.execSessions; got.Max != 2 || got.Total != 5 {
		t.Errorf("the server's sessions: max %d, total %d", got.Max, got.Total)
	}
	if _, err := ReadSettings(func(k string) string {
		return map[string]string{"SBF_MAX_EXEC_SESSIONS_TOTAL": "0"}[k]
	}); err == nil {
		t.Error("a total of 0 was accepted")
	}
}
