package mcpserver

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/reconcile"
	"github.com/sandboxforge/sbf/spec"
	"github.com/sandboxforge/sbf/state"
)

var v1Tools = []string{"create_instance", "list_instances", "destroy_instance", "extend_instance_ttl",
	"validate_workspace_config", "prepare_workspace", "plan", "apply", "get_desired_state"}

func TestToolsAndSchemas(t *testing.T) {
	f := newFixture(t, simSpec)
	res, err := f.c.ListTools(context.Background(), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]mcp.Tool{}
	for _, tool := range res.Tools {
		byName[tool.Name] = tool
	}
	for _, name := range v1Tools {
		if _, ok := byName[name]; !ok {
			t.Errorf("tool %s missing", name)
		}
	}
	required := map[string][]string{
		"create_instance": {"workspace_root"}, "destroy_instance": {"instance_id"},
		"extend_instance_ttl": {"instance_id", "ttl_minutes"}, "prepare_workspace": {"instance_id"},
		"validate_workspace_config": {"workspace_root"}, "list_instances": nil,
	}
	for name, want := range required {
		schema := byName[name].InputSchema
		got := slices.Clone(schema.Required)
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("%s requires %v, want %v", name, got, want)
		}
		if schema.AdditionalProperties != nil {
			t.Errorf("%s accepts unknown arguments (with a warning) but its schema says additionalProperties %v "+
				"(absent, JSON Schema's default, allows them)", name, schema.AdditionalProperties)
		}
		for prop, p := range schema.Properties {
			// create_instance's description says what an instance_id is, once.
			if d, _ := p.(map[string]any)["description"].(string); d == "" && prop != "instance_id" {
				t.Errorf("%s.%s has no description", name, prop)
			}
		}
	}
	if _, isErr := f.call("extend_instance_ttl", map[string]any{"instance_id": "inst_00000000"}); !isErr {
		t.Error("a missing required field was accepted")
	}
	checkDefaults(t, byName)
}

// Schemas state v1's defaults, so a client (or a model) knows what an
// omitted argument means.
func checkDefaults(t *testing.T, byName map[string]mcp.Tool) {
	t.Helper()
	want := map[string]map[string]any{
		"create_instance":   {"auto_bootstrap": true, "wait_for_ready": false},
		"list_instances":    {"include_expired": false},
		"destroy_instance":  {"force": false},
		"prepare_workspace": {"include_services": true, "wait_for_ready": false},
		"run_command":       {"timeout_seconds": 600.0, "max_output_bytes": 1048576.0},
		"docker_build":      {"no_cache": false},
		"docker_run":        {"detach": true, "privileged": false},
		"docker_exec":       {"timeout_seconds": 600.0},
		"docker_logs":       {"tail": 500.0, "follow": false},
		"docker_compose":    {"detach": true, "follow": false},
		"docker_ps":         {"all": false},
		"docker_cleanup":    {"mode": "safe"},
		"get_task_logs":     {"tail": 500.0},
		"stop_task":         {"force": false},
	}
	for tool, props := range want {
		schema := byName[tool].InputSchema
		if schema.AdditionalProperties != nil {
			t.Errorf("%s: additionalProperties %v", tool, schema.AdditionalProperties)
		}
		for prop, def := range props {
			p, _ := schema.Properties[prop].(map[string]any)
			if got, ok := p["default"]; !ok || got != def {
				t.Errorf("%s.%s: default %v (set: %v), want %v", tool, prop, got, ok, def)
			}
		}
	}
}

func TestLifecycleKeepsV1Fields(t *testing.T) {
	f := newFixture(t, simSpec)
	created := f.ok("create_instance", map[string]any{"workspace_root": f.root, "ttl_minutes": 20, "cpus": 2})
	hasKeys(t, "create_instance", created, "instance_id", "backend", "status", "created_at", "expires_at", "ssh_port",
		"workspace_root", "workspace_id", "auto_bootstrap", "wait_for_ready", "bootstrap")
	id := created["instance_id"].(string)
	if created["status"] != "running" || created["expires_at"] != "2026-11-25T12:20:00Z" ||
		created["created_at"] != "2026-11-25T12:00:00Z" ||
		len(id) != 13 || id[:5] != "inst_" {
		t.Errorf("create_instance = %v", created)
	}
	instance := created["backend_instance_name"].(string)
	if !f.world()[instance] {
		t.Fatalf("no VM %s in the world", instance)
	}

	list := f.ok("list_instances", nil)
	hasKeys(t, "list_instances", list, "instances", "backend", "backend_available")
	rows := list["instances"].([]any)
	if len(rows) != 1 {
		t.Fatalf("instances = %v", rows)
	}
	row := rows[0].(map[string]any)
	hasKeys(t, "an instance", row, "instance_id", "backend_name", "profile_name", "workspace_root", "workspace_id",
		"status",
		"created_at", "expires_at", "last_used_at", "owner_session", "ssh_port", "backend_instance_name",
		"runtime_name",
		"runtime_ready", "docker_command", "live_exists", "live_status", "reconciliation_drift")
	if row["instance_id"] != id || row["status"] != "running" || row["live_exists"] != true ||
		row["reconciliation_drift"] != false {
		t.Errorf("row = %v", row)
	}

	ext := f.ok("extend_instance_ttl", map[string]any{"instance_id": id, "ttl_minutes": 30})
	if ext["expires_at"] != "2026-11-25T12:50:00Z" || ext["ttl_extended_minutes"] != 30.0 {
		t.Errorf("extend = %v", ext)
	}
	gone := f.ok("destroy_instance", map[string]any{"instance_id": id})
	if gone["status"] != "destroyed" || f.world()[instance] {
		t.Errorf("destroy = %v, world %v", gone, f.world())
	}
	if rows := f.ok("list_instances", nil)["instances"].([]any); len(rows) != 0 {
		t.Errorf("destroyed instance still listed: %v", rows)
	}
	if rows := f.ok("list_instances", map[string]any{"include_expired": true})["instances"].([]any); len(rows) != 1 ||
		rows[0].(map[string]any)["status"] != "destroyed" {
		t.Errorf("include_expired: %v", rows)
	}
}

func TestV1ErrorCodes(t *testing.T) {
	f := newFixture(t, simSpec+"[lease]\nmax_instances = 1\n")
	f.fails("create_instance", map[string]any{"workspace_root": f.root, "ttl_minutes": 0}, "TTL_INVALID")
	d := f.fails("create_instance", map[string]any{"workspace_root": f.root, "ttl_minutes": 999},
		"TTL_INVALID")["details"].(map[string]any)
	if d["max_ttl_minutes"] != 120.0 || d["ttl_minutes"] != 999.0 {
		t.Errorf("TTL_INVALID details = %v", d)
	}
	f.fails("create_instance", map[string]any{"workspace_root": f.root + "/missing"}, "WORKSPACE_CONFIG_INVALID")
	for _, tool := range []string{"destroy_instance", "prepare_workspace"} {
		f.fails(tool, map[string]any{"instance_id": "inst_deadbeef"}, "INSTANCE_NOT_FOUND")
	}
	f.fails("extend_instance_ttl", map[string]any{"instance_id": "inst_deadbeef", "ttl_minutes": 5},
		"INSTANCE_NOT_FOUND")

	f.probe.CPUs = 1
	res := f.fails("create_instance", map[string]any{"workspace_root": f.root, "cpus": 4},
		"INSUFFICIENT_HOST_RESOURCES")
	det := res["details"].(map[string]any)
	if det["failed_checks"].([]any)[0] != "cpu" || det["suggested_vm"].(map[string]any)["cpus"] != 1.0 ||
		len(f.world()) != 0 {
		t.Errorf("preflight details %v, world %v", det, f.world())
	}
	f.probe = plenty()

	first := f.ok("create_instance", map[string]any{"workspace_root": f.root, "ttl_minutes": 10})
	lim := f.fails("create_instance", map[string]any{"workspace_root": f.root},
		"INSTANCE_LIMIT_EXCEEDED")["details"].(map[string]any)
	if lim["max_instances"] != 1.0 || lim["active_instances"] != 1.0 || len(f.world()) != 1 {
		t.Errorf("limit details %v, world %v", lim, f.world())
	}
	m, _ := spec.ReadManaged(f.root)
	r, _ := spec.Load(spec.Options{Root: f.root, Host: spec.Host{OS: "linux"}, Backends: drivers.Linked})
	if len(r.Config.Sandboxes) != 1 {
		t.Errorf("a refused create left a sandbox declared: %v (managed %v)", r.Config.Sandboxes, m)
	}
	if rec, err := state.Read(filepath.Join(f.root, spec.Dir), r.Root, r.WorkspaceID); err != nil ||
		len(rec.Sandboxes) != 1 {
		t.Errorf("a refused create left a record: %v %v", slices.Collect(maps.Keys(rec.Sandboxes)), err)
	}
	id := first["instance_id"].(string)
	f.fails("extend_instance_ttl", map[string]any{"instance_id": id, "ttl_minutes": 500}, "TTL_INVALID")
	f.clock.Advance(11 * time.Minute)
	term := f.fails("extend_instance_ttl", map[string]any{"instance_id": id, "ttl_minutes": 5}, "INSTANCE_TERMINAL")
	if term["details"].(map[string]any)["status"] != "expired" {
		t.Errorf("INSTANCE_TERMINAL details = %v", term["details"])
	}
	f.fails("prepare_workspace", map[string]any{"instance_id": id}, "INSTANCE_TERMINAL")

	broken := newFixture(t, "[vm]\ndriver = \"lima\"\n")
	un := broken.fails("create_instance", map[string]any{"workspace_root": broken.root},
		"BACKEND_UNAVAILABLE")["details"].(map[string]any)
	if un["probable_cause"] != "backend_binary_missing" || len(un["next_steps"].([]any)) == 0 {
		t.Errorf("BACKEND_UNAVAILABLE details = %v", un)
	}
	bad := newFixture(t, "[vm]\ncpus = true\n")
	cfg := bad.fails("validate_workspace_config", map[string]any{"workspace_root": bad.root},
		"WORKSPACE_CONFIG_INVALID")["details"].(map[string]any)
	if errs := cfg["errors"].([]any); len(errs) != 1 ||
		errs[0] != "vm.cpus must be a positive integer (got boolean true)" {
		t.Errorf("config errors = %v", cfg["errors"])
	}
}

func TestExpiryHappensInTheLoopEvenAfterAList(t *testing.T) {
	f := newFixture(t, simSpec)
	created := f.ok("create_instance", map[string]any{"workspace_root": f.root, "ttl_minutes": 5})
	instance := created["backend_instance_name"].(string)
	f.clock.Advance(6 * time.Minute)
	row := f.ok("list_instances", map[string]any{"include_expired": true})["instances"].([]any)[0].(map[string]any)
	if row["status"] != "expired" || row["live_exists"] != true || row["reconciliation_drift"] != true ||
		!f.world()[instance] {
		t.Fatalf("listed before the loop ran: %v", row)
	}
	ctx, cancel := context.WithCancel(context.Background())
	passes := make(chan struct{}, 10)
	done := make(chan error, 1)
	go func() {
		done <- f.srv.RunLoop(ctx, func(spec.Options, *reconcile.Result, error) { passes <- struct{}{} })
	}()
	<-passes
	cancel()
	<-done // the loop has stopped writing the world the test's TempDir removes
	if f.world()[instance] {
		t.Fatal("the loop did not delete the expired VM")
	}
	row = f.ok("list_instances", map[string]any{"include_expired": true})["instances"].([]any)[0].(map[string]any)
	if row["status"] != "expired" || row["live_exists"] != false || row["reconciliation_drift"] != false {
		t.Errorf("after the loop: %v", row)
	}
}

func TestInstancesSurviveARestart(t *testing.T) {
	f := newFixture(t, simSpec)
	id := f.ok("create_instance", map[string]any{"workspace_root": f.root})["instance_id"].(string)
	f.start(Settings{SweepInterval: time.Minute, Session: "local"}) // a new server process
	rows := f.ok("list_instances", nil)["instances"].([]any)
	if len(rows) != 1 || rows[0].(map[string]any)["instance_id"] != id {
		t.Fatalf("after restart: %v", rows)
	}
	if ws := f.srv.loopWorkspaces(); len(ws) != 1 || ws[0].Root != f.root {
		t.Errorf("the restarted loop does not cover the leased workspace: %v", ws)
	}
	f.ok("destroy_instance", map[string]any{"instance_id": id})
	if len(f.world()) != 0 {
		t.Errorf("world = %v", f.world())
	}
}

func TestParallelEditsLoseNothing(t *testing.T) {
	f := newFixture(t, simSpec+"[lease]\nmax_ttl = \"2h\"\nmax_lifetime = \"7d\"\n")
	id := f.ok("create_instance", map[string]any{"workspace_root": f.root, "ttl_minutes": 10})["instance_id"].(string)
	var wg sync.WaitGroup
	errs := make(chan string, 50)
	for i := 0; i < 50; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if out, isErr := f.call("extend_instance_ttl", map[string]any{"instance_id": id, "ttl_minutes": 1}); isErr {
				errs <- fmt.Sprint(out)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	m, _ := spec.ReadManaged(f.root)
	l, _ := m.Lease(id)
	if want := t0.Add(60 * time.Minute); !l.ExpiresAt.Equal(want) {
		t.Errorf("after 50 one-minute extensions the lease ends %v, want %v", l.ExpiresAt, want)
	}
}

func TestDeclarativeTools(t *testing.T) {
	f := newFixture(t, simSpec+"[sandboxes.api]\n")
	v := f.ok("validate_workspace_config", map[string]any{"workspace_root": f.root,
		"overrides": map[string]any{"vm": map[string]any{"cpus": 3}}})
	if v["valid"] != true || v["config"].(map[string]any)["vm"].(map[string]any)["cpus"] != 3.0 ||
		len(v["diagnostics"].([]any)) != 0 {
		t.Errorf("validate = %v", v)
	}
	p := f.ok("plan", map[string]any{"workspace_root": f.root})
	if changes := p["plan"].(map[string]any)["changes"].([]any); len(changes) != 1 || len(f.world()) != 0 {
		t.Errorf("plan = %v", p)
	}
	a := f.ok("apply", map[string]any{})
	if a["applied"] != true || len(f.world()) != 1 {
		t.Errorf("apply = %v", a)
	}
	if p := f.ok("plan", nil); len(p["plan"].(map[string]any)["changes"].([]any)) != 0 {
		t.Errorf("plan after apply = %v", p["text"])
	}
	d := f.ok("get_desired_state", nil)
	leases := d["managed_overrides"].(map[string]any)["leases"].(map[string]any)
	if _, ok := leases["api"]; !ok || d["workspace_root"] != f.root {
		t.Errorf("desired state = %v", d)
	}
}

// validate_workspace_config and `sbf validate` share the engine's verdict:
// a broken compose file makes the workspace invalid for both.
func TestValidateSeesBrokenComposeFiles(t *testing.T) {
	f := newFixture(t, "[vm]\ndriver = \"sim\"\n[sandboxes.api]\ncompose = true\n")
	os.WriteFile(filepath.Join(f.root, "compose.yaml"), []byte("services:\n  web:\n    image: [not, a, string]\n"),
		0o644)
	out := f.fails("validate_workspace_config", map[string]any{"workspace_root": f.root}, "WORKSPACE_CONFIG_INVALID")
	if msg, _ := out["message"].(string); !strings.Contains(msg, "compose.yaml") {
		t.Errorf("message does not name the compose file: %v", out)
	}
	v, err := f.srv.cfg.Engine.Validate(context.Background(), spec.Options{Root: f.root,
		Host: spec.Host{OS: "linux", Arch: "amd64"}})
	if err != nil || v.Valid() {
		t.Errorf("engine verdict: %v %+v", err, v)
	}
}

// Commands do not wake the reconcile loop: a pass per run_command would
// compete with the command for the guest. Not the first either: a server
// just started passes over every leased workspace already, and a wake would
// make every pass due again beside the command.
func TestRunCommandDoesNotWakeTheLoop(t *testing.T) {
	t.Run("a sandbox this server created", func(t *testing.T) {
		f := newFixture(t, simSpec)
		id := f.ok("create_instance", map[string]any{"workspace_root": f.root})["instance_id"].(string)
		runQuietly(t, f, id)
	})
	t.Run("a server's first call", func(t *testing.T) {
		f := newFixture(t, simSpec+"[sandboxes.api]\n")
		res, err := f.srv.cfg.Engine.Apply(context.Background(), spec.Options{Root: f.root,
			Host: spec.Host{OS: "linux", Arch: "amd64"}},
			reconcile.Options{Targets: []string{"api"}, Intent: reconcile.Up{Sandboxes: []string{"api"}}})
		if err != nil {
			t.Fatal(err)
		}
		runQuietly(t, f, res.InstanceOf("api"))
	})
}

// runQuietly runs the server's loop, waits for its passes to end, then
// runs five commands in instance id: no pass may follow.
func runQuietly(t *testing.T, f *fixture, id string) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	passes := make(chan struct{}, 100)
	go f.srv.RunLoop(ctx, func(spec.Options, *reconcile.Result, error) { passes <- struct{}{} })
	quiet := func() bool {
		select {
		case <-passes:
			return false
		case <-time.After(300 * time.Millisecond):
			return true
		}
	}
	<-passes
	for !quiet() {
	}
	for range 5 {
		f.ok("run_command", map[string]any{"instance_id": id, "command": "true"})
	}
	if !quiet() {
		t.Error("run_command woke the reconcile loop")
	}
}
