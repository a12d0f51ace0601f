package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/sandboxforge/sbf/drivers/sim"
	"github.com/sandboxforge/sbf/reconcile"
	"github.com/sandboxforge/sbf/spec"
)

// rpc sends one JSON-RPC request to the server as a transport would and
// decodes its result.
func (f *fixture) rpc(id int, method string, params map[string]any) map[string]any {
	f.t.Helper()
	raw, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	out, _ := json.Marshal(f.srv.MCP().HandleMessage(context.Background(), raw))
	var resp struct {
		Result map[string]any
		Error  map[string]any
	}
	if err := json.Unmarshal(out, &resp); err != nil || resp.Error != nil {
		f.t.Fatalf("%s: %s", method, out)
	}
	return resp.Result
}

// waitTask polls tasks/get until the task is no longer working, advancing
// the fake clock whenever the work waits on it.
func (f *fixture) waitTask(id string) string {
	f.t.Helper()
	for range 5000 {
		status := f.rpc(90, "tasks/get", map[string]any{"taskId": id})["status"].(string)
		if status != "working" {
			return status
		}
		if f.clock.Waiters() > 0 {
			f.clock.Advance(10 * time.Second)
		}
		time.Sleep(time.Millisecond)
	}
	f.t.Fatalf("task %s still working", id)
	return ""
}

// A long call started as a task runs to its end after tools/call has
// answered (mcp-go#897 would cancel it at once), and tasks/result holds
// what the call would have returned; the task suggests a pollInterval.
func TestACreateRunsAsATask(t *testing.T) {
	f := newFixture(t, simSpec)
	f.srv.cfg.Engine.Drivers = func(string, *spec.Resolved) (reconcile.Driver, error) {
		return sim.New(sim.Options{Dir: f.simDir, Clock: f.clock, Latency: "create=30s"})
	}
	f.rpc(1, "initialize", map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "t", "version": "1"}})
	created := f.rpc(2, "tools/call", map[string]any{"name": "create_instance",
		"arguments": map[string]any{"workspace_root": f.root}, "task": map[string]any{}})
	task := created["task"].(map[string]any)
	if ttl, _ := task["ttl"].(float64); ttl <= 0 || int64(ttl) > maxTaskTTLMillis {
		t.Errorf("a task without a ttl is kept %v ms; want at most the server's %d", task["ttl"], maxTaskTTLMillis)
	}
	id := task["taskId"].(string)
	// Each answer naming the task suggests how often to poll it.
	got := f.rpc(3, "tasks/get", map[string]any{"taskId": id})
	listed, _ := f.rpc(3, "tasks/list", map[string]any{})["tasks"].([]any)
	for _, named := range append([]any{task, got}, listed...) {
		if every, _ := named.(map[string]any)["pollInterval"].(float64); int64(every) != taskPollMillis {
			t.Errorf("a task suggests pollInterval %v, want %d: %v", every, taskPollMillis, named)
		}
	}
	if len(listed) != 1 {
		t.Errorf("tasks/list: %v", listed)
	}
	if status := f.waitTask(id); status != "completed" {
		t.Fatalf("task ended %s: %v", status, f.rpc(3, "tasks/get", map[string]any{"taskId": id}))
	}
	res := f.rpc(4, "tasks/result", map[string]any{"taskId": id})
	out, _ := res["structuredContent"].(map[string]any)
	if out == nil || out["status"] != "running" || out["instance_id"] == nil {
		t.Fatalf("tasks/result: %v", res)
	}
	f.ok("run_command", map[string]any{"instance_id": out["instance_id"], "command": "true"})
	for f.srv.runningTasks() > 0 { // the work ends just after its result is stored
		time.Sleep(time.Millisecond)
	}
}

// tasks/cancel stops the work as cancelling the call does: the create is
// undone and no VM or lease is left.
func TestACancelledCreateTaskLeavesNothing(t *testing.T) {
	f := newFixture(t, simSpec)
	f.srv.cfg.Engine.Drivers = func(string, *spec.Resolved) (reconcile.Driver, error) {
		return sim.New(sim.Options{Dir: f.simDir, Clock: f.clock, Latency: "create=1h"})
	}
	created := f.rpc(2, "tools/call", map[string]any{"name": "create_instance",
		"arguments": map[string]any{"workspace_root": f.root}, "task": map[string]any{"ttl": 60000}})
	id := created["task"].(map[string]any)["taskId"].(string)
	for deadline := time.Now().Add(10 * time.Second); f.clock.Waiters() == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) { // the create never got under way
			t.Fatal("the create task did not start")
		}
	}
	f.rpc(3, "tasks/cancel", map[string]any{"taskId": id})
	if status := f.waitTask(id); status != "cancelled" {
		t.Fatalf("task ended %s", status)
	}
	// The rollback finishes after the cancel is answered. A create that
	// was not stopped ends once its hour has passed, and its VM is listed.
	var list map[string]any
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		list = f.ok("list_instances", map[string]any{"include_expired": true})
		if fmt.Sprint(list["instances"]) == "[]" && f.srv.runningTasks() == 0 {
			return
		}
		f.clock.Advance(10 * time.Minute)
	}
	t.Errorf("a cancelled create left: %v", list)
}
