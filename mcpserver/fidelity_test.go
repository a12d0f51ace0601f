package mcpserver

import (
	"fmt"
	"strings"
	"testing"

	"github.com/sandboxforge/sbf/drivers/sim"
	"github.com/sandboxforge/sbf/reconcile"
	"github.com/sandboxforge/sbf/spec"
)

// list_instances reports an unavailable backend and a failed
// reconciliation as v1 did: error envelopes {error_code, message,
// details}, never bare strings.
func TestListInstancesErrorsAreEnvelopes(t *testing.T) {
	f := newFixture(t, simSpec)
	f.ok("create_instance", map[string]any{"workspace_root": f.root, "ttl_minutes": 10})

	out := f.ok("list_instances", nil)
	be, ok := out["backend_error"].(map[string]any)
	if out["backend_available"] != false || !ok {
		t.Fatalf("backend_error = %#v", out["backend_error"])
	}
	details, _ := be["details"].(map[string]any)
	if be["error_code"] != "BACKEND_UNAVAILABLE" || be["message"] == "" || details["probable_cause"] != "backend_binary_missing" {
		t.Errorf("backend_error = %v", be)
	}
	if _, ok := out["reconciliation_error"]; ok {
		t.Errorf("reconciliation_error without a failure: %v", out["reconciliation_error"])
	}

	// The backend fails to list: the lease is still reported, and why it
	// could not be reconciled is an envelope naming the workspace.
	eng := f.srv.cfg.Engine
	eng.Drivers = func(name string, _ *spec.Resolved) (reconcile.Driver, error) {
		return sim.New(sim.Options{Dir: f.simDir, Clock: f.clock, Faults: "list:*=fail"})
	}
	out = f.ok("list_instances", nil)
	re, ok := out["reconciliation_error"].(map[string]any)
	if !ok {
		t.Fatalf("reconciliation_error = %#v", out["reconciliation_error"])
	}
	errs, _ := re["details"].(map[string]any)["errors"].([]any)
	if re["error_code"] != "BACKEND_COMMAND_FAILED" || re["message"] != "Unable to reconcile with live backend state" || len(errs) != 1 {
		t.Fatalf("reconciliation_error = %v", re)
	}
	one := errs[0].(map[string]any)
	if one["workspace_root"] != f.root || one["error_code"] == "" || one["message"] == "" {
		t.Errorf("reconciliation_error.details.errors[0] = %v", one)
	}
	if _, ok := out["backend_error"]; ok || out["backend_available"] != true {
		t.Errorf("an available backend reported as unavailable: %v", out)
	}
}

// validate_workspace_config's config is v1's WorkspaceSettings.to_dict():
// it carries workspace_root, workspace_id and sources; the durations v1
// read as hours are also floats named *_hours; unset nullable keys are
// null. get_desired_state renders its config the same way.
func TestValidateConfigIsV1Shaped(t *testing.T) {
	f := newFixture(t, simSpec+"[sandboxes.api]\n")
	for _, tool := range []string{"validate_workspace_config", "get_desired_state"} {
		out := f.ok(tool, map[string]any{"workspace_root": f.root})
		cfg := out["config"].(map[string]any)
		if cfg["workspace_root"] != f.root || cfg["workspace_id"] != out["workspace_id"] || mustJSON(cfg["sources"]) != mustJSON(out["sources"]) ||
			len(cfg["sources"].([]any)) != 2 {
			t.Errorf("%s: config lacks v1's identity keys: root %v, id %v, sources %v", tool, cfg["workspace_root"], cfg["workspace_id"], cfg["sources"])
		}
		check := at(t, cfg, "build", "prebuilt", "staleness_check")
		detect := at(t, cfg, "build", "staleness_detection")
		if check["check_age_threshold"] != "24h" || check["check_age_threshold_hours"] != 24.0 ||
			detect["max_age_threshold"] != "24h" || detect["max_age_threshold_hours"] != 24.0 {
			t.Errorf("%s: thresholds %v / %v", tool, check, detect)
		}
		for _, path := range [][]string{{"vm", "arch"}, {"vm", "ttl"}, {"infra", "network_name"}, {"sandboxes", "api", "arch"}, {"sandboxes", "api", "ttl"}} {
			parent := at(t, cfg, path[:len(path)-1]...)
			if v, ok := parent[path[len(path)-1]]; !ok || v != nil {
				t.Errorf("%s: unset nullable %v = %#v, want null", tool, path, v)
			}
		}
		if at(t, cfg, "infra", "mysql")["inject_env_to"] != ".env" || at(t, cfg, "vm")["template"] != "template:docker" {
			t.Errorf("%s: set keys changed: %v", tool, cfg["infra"])
		}
	}

	overrides := map[string]any{
		"build": map[string]any{
			"prebuilt":            map[string]any{"staleness_check": map[string]any{"check_age_threshold": nil}},
			"staleness_detection": map[string]any{"max_age_threshold": "30m"},
		},
		"infra": map[string]any{"mysql": map[string]any{"inject_env_to": nil}, "redis": map[string]any{"inject_env_to": ""}},
	}
	out := f.ok("validate_workspace_config", map[string]any{"workspace_root": f.root, "overrides": overrides})
	cfg := out["config"].(map[string]any)
	check := at(t, cfg, "build", "prebuilt", "staleness_check")
	detect := at(t, cfg, "build", "staleness_detection")
	if v, ok := check["check_age_threshold"]; !ok || v != nil {
		t.Errorf("check_age_threshold reset by null = %#v", v)
	}
	if v, ok := check["check_age_threshold_hours"]; !ok || v != nil {
		t.Errorf("check_age_threshold_hours of an unset threshold = %#v", v)
	}
	if detect["max_age_threshold"] != "30m" || detect["max_age_threshold_hours"] != 0.5 {
		t.Errorf("max_age_threshold = %v", detect)
	}
	for _, svc := range []string{"mysql", "redis"} {
		if v, ok := at(t, cfg, "infra", svc)["inject_env_to"]; !ok || v != nil {
			t.Errorf("infra.%s.inject_env_to = %#v, want null", svc, v)
		}
	}
	if src := cfg["sources"].([]any); mustJSON(src) != mustJSON(out["sources"]) || src[len(src)-1] != "request_overrides" {
		t.Errorf("config.sources %v, sources %v", cfg["sources"], out["sources"])
	}
}

// at walks nested objects of a decoded result.
func at(t *testing.T, m map[string]any, path ...string) map[string]any {
	t.Helper()
	for _, k := range path {
		next, ok := m[k].(map[string]any)
		if !ok {
			t.Fatalf("%v: no object at %q in %v", path, k, m)
		}
		m = next
	}
	return m
}

// Arguments a tool does not take are ignored, as v1 did, and named in the
// result's warnings; the call does what it would have done without them.
// A known argument of the wrong type still fails, INVALID_ARGUMENTS.
func TestUnknownArgumentsAreIgnoredWithAWarning(t *testing.T) {
	f := newFixture(t, simSpec)
	created := f.ok("create_instance", map[string]any{"workspace_root": f.root, "ttl_minutes": 10, "colour": "red", "auto_bootstrap": false, "profile_name": "x"})
	if created["status"] != "running" || len(f.world()) != 1 {
		t.Fatalf("create_instance with unknown arguments = %v", created)
	}
	if got := mustJSON(created["warnings"]); got != `["unknown argument \"colour\" ignored","unknown argument \"profile_name\" ignored"]` {
		t.Errorf("warnings = %s", got)
	}
	list := f.ok("list_instances", map[string]any{"verbose": true})
	if len(list["instances"].([]any)) != 1 || mustJSON(list["warnings"]) != `["unknown argument \"verbose\" ignored"]` {
		t.Errorf("list_instances = %v", list)
	}
	// A tool that already warns keeps its own warnings first.
	g := newFixture(t, simSpec+"[sandboxes.api]\n")
	writeManaged(t, g.root, "[leases.api]\nacquired_at = 2026-11-25T11:00:00Z\nexpires_at = 2099-01-01T00:00:00Z\n")
	ds := g.ok("get_desired_state", map[string]any{"workspace_root": g.root, "extra": 1})
	if w, _ := ds["warnings"].([]any); len(w) != 2 || !strings.Contains(w[0].(string), "max_lifetime") || w[1] != `unknown argument "extra" ignored` {
		t.Errorf("get_desired_state warnings = %v", ds["warnings"])
	}
	// Without unknown arguments there is no warnings key where v1 had none.
	if _, ok := f.ok("list_instances", nil)["warnings"]; ok {
		t.Error("list_instances warns without unknown arguments")
	}

	// The wrong type of a known argument is an error, and the ignored one
	// is still named.
	out := f.fails("extend_instance_ttl", map[string]any{"instance_id": created["instance_id"], "ttl_minutes": "ten", "why": "x"}, "INVALID_ARGUMENTS")
	details := out["details"].(map[string]any)
	if details["field"] != "ttl_minutes" || mustJSON(details["warnings"]) != `["unknown argument \"why\" ignored"]` {
		t.Errorf("details = %v", details)
	}
	// A failure of the tool itself names it too.
	out = f.fails("destroy_instance", map[string]any{"instance_id": "inst_deadbeef", "purge": true}, "INSTANCE_NOT_FOUND")
	if mustJSON(out["details"].(map[string]any)["warnings"]) != `["unknown argument \"purge\" ignored"]` {
		t.Errorf("details = %v", out["details"])
	}

	// Only unknown arguments: the required one is still required.
	f.fails("validate_workspace_config", map[string]any{"root": f.root}, "INVALID_ARGUMENTS")

	// Many unknown arguments: the answer does not grow with them.
	many := map[string]any{"workspace_root": f.root}
	for i := 0; i < 500; i++ {
		many[fmt.Sprintf("x%03d_%s", i, strings.Repeat("y", 300))] = i
	}
	v := f.ok("validate_workspace_config", many)
	ws := v["warnings"].([]any)
	if len(ws) != maxIgnoredNamed+1 || ws[maxIgnoredNamed] != "… and 480 more unknown arguments ignored" || len(mustJSON(ws)) > 4<<10 {
		t.Errorf("%d warnings, %d bytes: %v", len(ws), len(mustJSON(ws)), ws[maxIgnoredNamed])
	}
	if !strings.HasPrefix(ws[0].(string), `unknown argument "x000_yyy`) {
		t.Errorf("warnings not sorted: %v", ws[0])
	}
}
