package mcpserver

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/sandboxforge/sbf/drivers/sim"
	"github.com/sandboxforge/sbf/reconcile"
	"github.com/sandboxforge/sbf/spec"
)

// slowBoot makes the fixture's sim take d of its fake clock to create a VM,
// and advances the clock by d whenever the create waits, as a boot takes
// time.
func (f *fixture) slowBoot(t *testing.T, d time.Duration) {
	t.Helper()
	f.srv.cfg.Engine.Drivers = func(name string, _ *spec.Resolved) (reconcile.Driver, error) {
		return sim.New(sim.Options{Dir: f.simDir, Clock: f.clock, Latency: "create=" + d.String()})
	}
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) })
	go func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
				if f.clock.Waiters() > 0 {
					f.clock.Advance(d)
				}
			}
		}
	}()
}

// v1 stamped created_at when it inserted the lease, before the VM was
// created: expires_at − created_at is the TTL however long the boot took,
// and last_used_at starts there, then follows each command.
func TestCreatedAtIsTheLeaseStart(t *testing.T) {
	f := newFixture(t, simSpec)
	f.slowBoot(t, 3*time.Second)
	created := f.ok("create_instance", map[string]any{"workspace_root": f.root, "ttl_minutes": 30})
	if created["created_at"] != "2026-11-25T12:00:00Z" || created["expires_at"] != "2026-11-25T12:30:00Z" {
		t.Errorf("create_instance: created_at %v, expires_at %v (want the TTL apart)", created["created_at"],
			created["expires_at"])
	}
	id := created["instance_id"].(string)
	row := f.ok("list_instances", nil)["instances"].([]any)[0].(map[string]any)
	if row["created_at"] != "2026-11-25T12:00:00Z" || row["last_used_at"] != "2026-11-25T12:00:00Z" {
		t.Errorf("list_instances right after create: %v", row)
	}
	f.clock.Advance(time.Minute)
	f.ok("run_command", map[string]any{"instance_id": id, "command": "true"})
	row = f.ok("list_instances", nil)["instances"].([]any)[0].(map[string]any)
	if row["created_at"] != "2026-11-25T12:00:00Z" || row["last_used_at"] == row["created_at"] ||
		row["last_used_at"] == nil {
		t.Errorf("list_instances after a command: %v", row)
	}
}

// list_instances names the backend the server's workspace uses (its [vm]
// driver when SANDBOX_BACKEND is unset), whether it can run, and its
// version, as v1 named its one backend.
func TestListReportsTheWorkspaceBackend(t *testing.T) {
	f := newFixture(t, simSpec)
	f.ok("create_instance", map[string]any{"workspace_root": f.root})
	out := f.ok("list_instances", nil)
	if out["backend"] != "sim" || out["backend_available"] != true || out["backend_error"] != nil ||
		out["backend_version"] == nil || len(out["instances"].([]any)) != 1 {
		t.Errorf("list_instances on a sim workspace: %v", out)
	}
	g := newFixture(t, "[vm]\ncpus = 1\n") // no driver: Lima on Linux, which the fixture has not
	out = g.ok("list_instances", nil)
	if out["backend"] != "lima" || out["backend_available"] != false || out["backend_version"] != nil ||
		out["backend_error"].(map[string]any)["error_code"] != "BACKEND_UNAVAILABLE" {
		t.Errorf("list_instances without a usable backend: %v", out)
	}
}

// An expired lease's VM is stopped by force, then deleted, as v1's
// sweeper did (stop --force, delete --force); a destroy still stops it
// cleanly first.
func TestExpiryForcesTheStop(t *testing.T) {
	f := newFixture(t, simSpec)
	expiring := f.ok("create_instance", map[string]any{"workspace_root": f.root, "ttl_minutes": 5})
	destroyed := f.ok("create_instance", map[string]any{"workspace_root": f.root, "ttl_minutes": 30})
	f.ok("destroy_instance", map[string]any{"instance_id": destroyed["instance_id"]})
	f.clock.Advance(6 * time.Minute)
	ctx, cancel := context.WithCancel(context.Background())
	passes := make(chan struct{}, 10)
	done := make(chan error, 1)
	go func() {
		done <- f.srv.RunLoop(ctx, func(spec.Options, *reconcile.Result, error) { passes <- struct{}{} })
	}()
	<-passes
	cancel()
	<-done
	ops, err := sim.ReadLog(f.simDir)
	if err != nil {
		t.Fatal(err)
	}
	byInstance := map[string][]string{}
	for _, op := range ops {
		if op.Op != "list" && op.Op != "exec" {
			byInstance[op.Instance] = append(byInstance[op.Instance], op.Op)
		}
	}
	if got := byInstance[expiring["backend_instance_name"].(string)]; !slices.Equal(got,
		[]string{"create", "start", "force-stop", "delete"}) {
		t.Errorf("expired VM: %v", got)
	}
	if got := byInstance[destroyed["backend_instance_name"].(string)]; !slices.Equal(got,
		[]string{"create", "start", "stop", "delete"}) {
		t.Errorf("destroyed VM: %v", got)
	}
}

// A destroyed instance keeps its host index entry while its record lasts
// (run_command says INSTANCE_TERMINAL, include_expired lists it); once
// the record outlives [lease] keep_records, the loop drops both.
func TestIndexEntryGoesWithItsRecord(t *testing.T) {
	f := newFixture(t, simSpec)
	id := f.ok("create_instance", map[string]any{"workspace_root": f.root})["instance_id"].(string)
	f.ok("destroy_instance", map[string]any{"instance_id": id})
	f.fails("run_command", map[string]any{"instance_id": id, "command": "true"}, "INSTANCE_TERMINAL")
	if rows := f.ok("list_instances", map[string]any{"include_expired": true})["instances"].([]any); len(rows) != 1 {
		t.Fatalf("destroyed, listed with include_expired: %v", rows)
	}
	f.clock.Advance(8 * 24 * time.Hour) // past keep_records (7d)
	ctx, cancel := context.WithCancel(context.Background())
	passes := make(chan struct{}, 10)
	done := make(chan error, 1)
	go func() {
		done <- f.srv.RunLoop(ctx, func(spec.Options, *reconcile.Result, error) { passes <- struct{}{} })
	}()
	<-passes
	cancel()
	<-done
	if entries, _ := f.srv.index.All(); len(entries) != 0 {
		t.Errorf("index after the record was forgotten: %+v", entries)
	}
	if rows := f.ok("list_instances", map[string]any{"include_expired": true})["instances"].([]any); len(rows) != 0 {
		t.Errorf("a forgotten instance is listed: %v", rows)
	}
	f.fails("run_command", map[string]any{"instance_id": id, "command": "true"}, "INSTANCE_NOT_FOUND")
}
