package mcpserver

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/drivers/sim"
	"github.com/sandboxforge/sbf/reconcile"
	"github.com/sandboxforge/sbf/spec"
	"github.com/sandboxforge/sbf/v1import"
	"github.com/sandboxforge/sbf/v1import/leases"
	"github.com/sandboxforge/sbf/v1import/leases/v1test"
)

// A SandboxForge v1 VM imported as `sbf import-v1` does (the engine's
// AdoptInstance, the sandbox named by v1's instance id) into a workspace
// with no configuration file, as v1 allowed: list_instances shows it under
// the v1 id with its v1 VM name while its lease lasts, v1 tools take the
// id, and the server's loop deletes the VM once the lease has ended.
func TestImportedV1InstanceIsListedUnderItsV1ID(t *testing.T) {
	f := newFixture(t, simSpec)
	ctx := context.Background()
	root := filepath.Join(t.TempDir(), "v1-workspace")
	if err := os.Mkdir(root, 0o755); err != nil {
		t.Fatal(err)
	}
	d, err := sim.New(sim.Options{Dir: f.simDir})
	if err != nil {
		t.Fatal(err)
	}
	vm := drivers.Spec{Name: "agent-0a1b2c3d", CPUs: 2, MemoryGiB: 4, DiskGiB: 30}
	if err := d.Create(ctx, vm); err != nil {
		t.Fatal(err)
	}
	if err := d.Start(ctx, vm); err != nil {
		t.Fatal(err)
	}
	ws, err := f.srv.workspace(ctx, root, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := f.srv.cfg.Engine.AdoptInstance(ctx, ws, reconcile.AdoptRequest{Sandbox: "inst_0a1b2c3d",
		Instance: vm.Name,
		Driver:   sim.Name, ExpiresAt: t0.Add(20 * time.Minute), AcquiredAt: t0.Add(-time.Hour),
		Keys: map[string]any{"cpus": int64(2), "memory_gib": 4.0, "disk_gib": 30.0, "mounts": []any{},
			"ports": []any{}}})
	if err != nil {
		t.Fatal(err)
	}
	if res.InstanceOf("inst_0a1b2c3d") != vm.Name {
		t.Fatalf("adopted as %q", res.InstanceOf("inst_0a1b2c3d"))
	}

	rows := f.ok("list_instances", nil)["instances"].([]any)
	if len(rows) != 1 {
		t.Fatalf("instances = %v", rows)
	}
	row := rows[0].(map[string]any)
	if row["instance_id"] != "inst_0a1b2c3d" || row["backend_instance_name"] != vm.Name ||
		row["backend_name"] != sim.Name ||
		row["status"] != "running" || row["live_exists"] != true || row["reconciliation_drift"] != false ||
		row["expires_at"] != "2026-11-25T12:20:00Z" || row["workspace_root"] != ws.Root ||
		row["sandbox"] != "inst_0a1b2c3d" {
		t.Errorf("row = %v", row)
	}
	ext := f.ok("extend_instance_ttl", map[string]any{"instance_id": "inst_0a1b2c3d", "ttl_minutes": 10})
	if ext["expires_at"] != "2026-11-25T12:30:00Z" {
		t.Errorf("extend = %v", ext)
	}
	if inst := f.world(); !inst[vm.Name] || len(inst) != 1 {
		t.Errorf("world = %v (the import must neither replace nor add a VM)", inst)
	}
	if _, err := os.Stat(filepath.Join(root, spec.FileName)); !os.IsNotExist(err) {
		t.Errorf("a configuration file appeared: %v", err)
	}

	// The lease ends; the loop (which covers the leased workspace) deletes
	// the VM like any other.
	f.clock.Advance(31 * time.Minute)
	loopCtx, cancel := context.WithCancel(ctx)
	passes := make(chan string, 10)
	done := make(chan error, 1)
	go func() {
		done <- f.srv.RunLoop(loopCtx, func(ws spec.Options, _ *reconcile.Result, err error) {
			if err != nil {
				t.Errorf("pass over %s: %v", ws.Root, err)
			}
			passes <- ws.Root
		})
	}()
	deadline := time.After(10 * time.Second)
	for f.world()[vm.Name] {
		select {
		case <-passes:
		case <-deadline:
			t.Fatal("the loop did not delete the imported VM after its lease")
		}
	}
	cancel()
	<-done
	// Not listed any more, but include_expired shows it under its own VM.
	if rows := f.ok("list_instances", nil)["instances"].([]any); len(rows) != 0 {
		t.Errorf("an expired import is still listed: %v", rows)
	}
	rows = f.ok("list_instances", map[string]any{"include_expired": true})["instances"].([]any)
	if len(rows) != 1 || rows[0].(map[string]any)["backend_instance_name"] != vm.Name ||
		rows[0].(map[string]any)["status"] != "expired" {
		t.Errorf("include_expired: %v", rows)
	}
}

// `sbf import-v1` of a legacy-schema database (lima_name, v1 before its
// Hyper-V backend), run as the command runs it (v1import over the same
// host state), then v1's tools: the import is listed under its v1 id, with
// v1's created_at, by list_instances with or without include_expired,
// before and after it is destroyed; run_command and extend_instance_ttl
// take the id.
func TestLegacyImportIsListed(t *testing.T) {
	f := newFixture(t, simSpec)
	ctx := context.Background()
	d, err := sim.New(sim.Options{Dir: f.simDir})
	if err != nil {
		t.Fatal(err)
	}
	vm := drivers.Spec{Name: "agent-0a1b2c3d", CPUs: 1, MemoryGiB: 2, DiskGiB: 15}
	if err := d.Create(ctx, vm); err != nil {
		t.Fatal(err)
	}
	if err := d.Start(ctx, vm); err != nil {
		t.Fatal(err)
	}
	db := v1test.Write(t, t.TempDir(), v1test.Concat([]string{v1test.Legacy}, v1test.Indexes),
		v1test.Row{ID: "inst_0a1b2c3d", Backend: "lima", Root: f.root, Status: "running",
			Created: "2026-11-25T11:50:00Z", Expires: "2026-11-25T12:20:00Z", Owner: "local", Name: vm.Name,
			Ready: 1, Docker: "docker"})
	eng := f.srv.cfg.Engine
	inv, err := v1import.TakeInventory(ctx, eng, v1import.Source{DB: db, Drivers: map[string]string{"lima": sim.Name}})
	if err != nil || inv.Schema != leases.Legacy {
		t.Fatalf("inventory: %+v, %v", inv, err)
	}
	if _, err := v1import.Run(ctx, eng, inv, v1import.Options{Workspace: spec.Options{Host: f.srv.cfg.Host}}); err != nil {
		t.Fatal(err)
	}

	for _, all := range []bool{false, true} {
		rows := f.ok("list_instances", map[string]any{"include_expired": all})["instances"].([]any)
		if len(rows) != 1 {
			t.Fatalf("include_expired=%v: %v", all, rows)
		}
		row := rows[0].(map[string]any)
		if row["instance_id"] != "inst_0a1b2c3d" || row["backend_instance_name"] != vm.Name ||
			row["status"] != "running" || row["created_at"] != "2026-11-25T11:50:00Z" ||
			row["expires_at"] != "2026-11-25T12:20:00Z" {
			t.Errorf("include_expired=%v: %v", all, row)
		}
	}
	f.ok("run_command", map[string]any{"instance_id": "inst_0a1b2c3d", "command": "true"})
	f.ok("extend_instance_ttl", map[string]any{"instance_id": "inst_0a1b2c3d", "ttl_minutes": 10})
	f.ok("destroy_instance", map[string]any{"instance_id": "inst_0a1b2c3d"})
	rows := f.ok("list_instances", map[string]any{"include_expired": true})["instances"].([]any)
	if len(rows) != 1 || rows[0].(map[string]any)["instance_id"] != "inst_0a1b2c3d" ||
		rows[0].(map[string]any)["status"] != "destroyed" {
		t.Errorf("after destroy: %v", rows)
	}
}
