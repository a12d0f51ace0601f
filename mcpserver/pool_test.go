package mcpserver

import (
	"context"
	"strings"
	"testing"

	"github.com/sandboxforge/sbf/reconcile"
)

// pooledFixture is a sim workspace of 1-CPU sandboxes whose pool keeps
// one 2-CPU spare, filled.
func pooledFixture(t *testing.T) *fixture {
	t.Helper()
	f := newFixture(t, "[vm]\ndriver = \"sim\"\ncpus = 1\n[pool.agents]\ncpus = 2\nsize = 1\n")
	ws, err := f.srv.workspace(context.Background(), f.root, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.srv.cfg.Engine.Apply(context.Background(), ws,
		reconcile.Options{Intent: reconcile.FillPools{}}); err != nil {
		t.Fatalf("filling the pool: %v", err)
	}
	return f
}

// An agent's create_instance adopts a warm spare of its shape: the
// result names the spare as the backend instance, list_instances and
// run_command reach it, and destroy_instance deletes it.
func TestCreateInstanceAdoptsAWarmSpare(t *testing.T) {
	f := pooledFixture(t)
	var spare string
	for name := range f.world() {
		spare = name
	}
	if !strings.HasPrefix(spare, "sbf-pool-") || len(f.world()) != 1 {
		t.Fatalf("world after the fill: %v", f.world())
	}
	// cpus 1 is not the pool's shape: a cold create.
	cold := f.ok("create_instance", map[string]any{"workspace_root": f.root, "ttl_minutes": 20, "cpus": 1})
	if cold["backend_instance_name"] == spare {
		t.Errorf("a 1-CPU sandbox adopted the 2-CPU spare: %v", cold)
	}
	warm := f.ok("create_instance", map[string]any{"workspace_root": f.root, "ttl_minutes": 20, "cpus": 2})
	if warm["backend_instance_name"] != spare || warm["status"] != "running" {
		t.Fatalf("create_instance(cpus 2) = %v, want the spare %s", warm, spare)
	}
	id := warm["instance_id"].(string)
	found := false
	for _, row := range f.ok("list_instances", nil)["instances"].([]any) {
		r := row.(map[string]any)
		if r["instance_id"] == id {
			found = r["backend_instance_name"] == spare && r["live_exists"] == true
		}
	}
	if !found {
		t.Errorf("list_instances does not show %s on %s", id, spare)
	}
	if out := f.ok("run_command", map[string]any{"instance_id": id,
		"command": "echo warm"}); out["stdout"] != "warm\n" {
		t.Errorf("run_command in the adopted VM: %v", out)
	}
	f.ok("destroy_instance", map[string]any{"instance_id": id})
	if f.world()[spare] {
		t.Errorf("destroy_instance left the adopted VM %s", spare)
	}
}
