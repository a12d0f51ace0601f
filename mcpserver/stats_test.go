package mcpserver

import (
	"context"
	"runtime"
	"testing"

	"github.com/sandboxforge/sbf/drivers/sim"
)

// get_instance_stats reads the guest's /proc and df: on the sim those are
// this host's, and it says so.
func TestInstanceStats(t *testing.T) {
	f := newFixture(t, simSpec)
	id := f.ok("create_instance", map[string]any{"workspace_root": f.root, "ttl_minutes": 30})["instance_id"].(string)
	f.ok("run_command", map[string]any{"instance_id": id, "command": "echo hi"})
	st := f.ok("get_instance_stats", map[string]any{"instance_id": id})
	if st["shared_with_host"] != true || st["driver"] != "sim" || st["instance_id"] != id {
		t.Errorf("stats: %v", st)
	}
	if lease := st["lease"].(map[string]any); lease["seconds_left"].(float64) != 1800 {
		t.Errorf("lease: %v", lease)
	}
	if last := st["last_command"].(map[string]any); last["command"] != "echo hi" || last["tool"] != "run_command" {
		t.Errorf("last command: %v", last)
	}
	if runtime.GOOS != "linux" {
		return // no /proc here: partial figures
	}
	cpu, mem, disk := st["cpu"].(map[string]any), st["memory"].(map[string]any), st["disk"].(map[string]any)
	if cpu["count"].(float64) != float64(runtime.NumCPU()) || mem["total_bytes"].(float64) <= 0 ||
		disk["total_bytes"].(float64) <= 0 || st["uptime_seconds"].(float64) <= 0 || st["partial"] != false {
		t.Errorf("figures: %v", st)
	}
	if p := cpu["percent"].(float64); p < 0 || p > 100 {
		t.Errorf("cpu percent %v", p)
	}
}

// health runs a command in every sandbox holding a lease; one whose VM
// stopped makes the workspace unhealthy.
func TestHealth(t *testing.T) {
	f := newFixture(t, simSpec)
	id := f.ok("create_instance", map[string]any{"workspace_root": f.root})["instance_id"].(string)
	h := f.ok("health", map[string]any{})
	rows := h["sandboxes"].([]any)
	if h["healthy"] != true || len(rows) != 1 {
		t.Fatalf("health: %v", h)
	}
	row := rows[0].(map[string]any)
	if row["status"] != "ok" || row["instance_id"] != id || row["lease_seconds_left"].(float64) <= 0 {
		t.Errorf("row: %v", row)
	}
	d, _ := sim.New(sim.Options{Dir: f.simDir})
	if err := d.Stop(context.Background(), row["instance"].(string)); err != nil {
		t.Fatal(err)
	}
	h = f.ok("health", map[string]any{})
	if row := h["sandboxes"].([]any)[0].(map[string]any); h["healthy"] != false || row["status"] != "down" {
		t.Errorf("a stopped VM: %v", h)
	}
	f.ok("destroy_instance", map[string]any{"instance_id": id})
	h = f.ok("health", map[string]any{})
	if row := h["sandboxes"].([]any)[0].(map[string]any); h["healthy"] != true || row["status"] != "no lease" {
		t.Errorf("after destroy: %v", h)
	}
}
