package mcpserver

import (
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
