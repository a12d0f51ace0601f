package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

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

	// A server whose workspace names no driver reports Lima's, which the
	// fixture cannot run.
	out := newFixture(t, "[vm]\ncpus = 1\n").ok("list_instances", nil)
	be, ok := out["backend_error"].(map[string]any)
	if out["backend_available"] != false || !ok {
		t.Fatalf("backend_error = %#v", out["backend_error"])
	}
	details, _ := be["details"].(map[string]any)
	if be["error_code"] != "BACKEND_UNAVAILABLE" || be["message"] == "" ||
		details["probable_cause"] != "backend_binary_missing" {
		t.Errorf("backend_error = %v", be)
	}
	if out = f.ok("list_instances", nil); out["reconciliation_error"] != nil || out["backend_error"] != nil {
		t.Errorf("errors without a failure: %v", out)
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
	if re["error_code"] != "BACKEND_COMMAND_FAILED" ||
		re["message"] != "Unable to reconcile with live backend state" || len(errs) != 1 {
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
		if cfg["workspace_root"] != f.root || cfg["workspace_id"] != out["workspace_id"] ||
			mustJSON(cfg["sources"]) != mustJSON(out["sources"]) ||
			len(cfg["sources"].([]any)) != 2 {
			t.Errorf("%s: config lacks v1's identity keys: root %v, id %v, sources %v", tool, cfg["workspace_root"],
				cfg["workspace_id"], cfg["sources"])
		}
		check := at(t, cfg, "build", "prebuilt", "staleness_check")
		detect := at(t, cfg, "build", "staleness_detection")
		if check["check_age_threshold"] != "24h" || check["check_age_threshold_hours"] != 24.0 ||
			detect["max_age_threshold"] != "24h" || detect["max_age_threshold_hours"] != 24.0 {
			t.Errorf("%s: thresholds %v / %v", tool, check, detect)
		}
		for _, path := range [][]string{{"vm", "arch"}, {"vm", "ttl"}, {"infra", "network_name"}, {"sandboxes",
			"api", "arch"}, {"sandboxes", "api", "ttl"}} {
			parent := at(t, cfg, path[:len(path)-1]...)
			if v, ok := parent[path[len(path)-1]]; !ok || v != nil {
				t.Errorf("%s: unset nullable %v = %#v, want null", tool, path, v)
			}
		}
		if at(t, cfg, "infra", "mysql")["inject_env_to"] != ".env" ||
			at(t, cfg, "vm")["template"] != "template:docker" {
			t.Errorf("%s: set keys changed: %v", tool, cfg["infra"])
		}
	}

	overrides := map[string]any{
		"build": map[string]any{
			"prebuilt":            map[string]any{"staleness_check": map[string]any{"check_age_threshold": nil}},
			"staleness_detection": map[string]any{"max_age_threshold": "30m"},
		},
		"infra": map[string]any{"mysql": map[string]any{"inject_env_to": nil},
			"redis": map[string]any{"inject_env_to": ""}},
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
	if src := cfg["sources"].([]any); mustJSON(src) != mustJSON(out["sources"]) ||
		src[len(src)-1] != "request_overrides" {
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
	created := f.ok("create_instance", map[string]any{"workspace_root": f.root, "ttl_minutes": 10, "colour": "red",
		"auto_bootstrap": false, "profile_name": "x"})
	if created["status"] != "running" || len(f.world()) != 1 {
		t.Fatalf("create_instance with unknown arguments = %v", created)
	}
	if got := mustJSON(created["warnings"]); got != `["unknown argument \"colour\" ignored","unknown argument `+
		`\"profile_name\" ignored"]` {
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
	if w, _ := ds["warnings"].([]any); len(w) != 2 || !strings.Contains(w[0].(string), "max_lifetime") ||
		w[1] != `unknown argument "extra" ignored` {
		t.Errorf("get_desired_state warnings = %v", ds["warnings"])
	}
	// Without unknown arguments there is no warnings key where v1 had none.
	if _, ok := f.ok("list_instances", nil)["warnings"]; ok {
		t.Error("list_instances warns without unknown arguments")
	}

	// The wrong type of a known argument is an error, and the ignored one
	// is still named.
	out := f.fails("extend_instance_ttl", map[string]any{"instance_id": created["instance_id"],
		"ttl_minutes": "ten", "why": "x"}, "INVALID_ARGUMENTS")
	details := out["details"].(map[string]any)
	if details["field"] != "ttl_minutes" || mustJSON(details["warnings"]) != `["unknown argument \"why\" ignored"]` {
		t.Errorf("details = %v", details)
	}
	// A failure of the tool itself names it too.
	out = f.fails("destroy_instance", map[string]any{"instance_id": "inst_deadbeef", "purge": true},
		"INSTANCE_NOT_FOUND")
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
	if len(ws) != maxIgnoredNamed+1 || ws[maxIgnoredNamed] != "… and 480 more unknown arguments ignored" ||
		len(mustJSON(ws)) > 4<<10 {
		t.Errorf("%d warnings, %d bytes: %v", len(ws), len(mustJSON(ws)), ws[maxIgnoredNamed])
	}
	if !strings.HasPrefix(ws[0].(string), `unknown argument "x000_yyy`) {
		t.Errorf("warnings not sorted: %v", ws[0])
	}
}

// wantHints is what each tool does, read from its handler: v1 set no
// annotations, so clients assumed every tool destructive. Read-only tools
// are also idempotent and closed; see hints.go for the meaning of each.
var wantHints = map[string]hints{
	"enable_toolset":             {idempotent: true},
	"create_instance":            {openWorld: true},
	"list_instances":             {readOnly: true, idempotent: true},
	"destroy_instance":           {destructive: true, idempotent: true},
	"extend_instance_ttl":        {},
	"validate_workspace_config":  {readOnly: true, idempotent: true},
	"plan":                       {readOnly: true, idempotent: true},
	"get_desired_state":          {readOnly: true, idempotent: true},
	"apply":                      {destructive: true, idempotent: true, openWorld: true},
	"prepare_workspace":          {destructive: true, idempotent: true, openWorld: true},
	"run_command":                {destructive: true, openWorld: true},
	"run_ephemeral":              {destructive: true, openWorld: true},
	"copy_to_instance":           {destructive: true, idempotent: true},
	"copy_from_instance":         {destructive: true, idempotent: true},
	"sync_workspace_to_instance": {destructive: true, idempotent: true},
	"sync_instance_to_workspace": {destructive: true, idempotent: true},
	"collect_artifacts":          {destructive: true},
	"start_background_task":      {destructive: true, openWorld: true},
	"get_task_status":            {readOnly: true, idempotent: true},
	"get_task_logs":              {readOnly: true, idempotent: true},
	"stop_task":                  {destructive: true, idempotent: true},
	"validate_image":             {readOnly: true, idempotent: true},
	"docker_ps":                  {readOnly: true, idempotent: true},
	"docker_images":              {readOnly: true, idempotent: true},
	"docker_logs":                {readOnly: true, idempotent: true},
	"docker_build":               {openWorld: true},
	"docker_run":                 {destructive: true, openWorld: true},
	"docker_exec":                {destructive: true, openWorld: true},
	"docker_compose":             {destructive: true, openWorld: true},
	"docker_cleanup":             {destructive: true, idempotent: true},
}

// Every registered tool says, in tools/list, exactly what wantHints says:
// destructiveHint and openWorldHint explicit (the protocol defaults both
// to true), readOnlyHint and idempotentHint explicit when true (missing,
// both are false).
func TestToolAnnotationsAreTruthful(t *testing.T) {
	f := newFixture(t, simSpec)
	res, err := f.c.ListTools(context.Background(), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range res.Tools {
		want, ok := wantHints[tool.Name]
		if !ok {
			t.Errorf("tool %s has no expected annotations in wantHints (add it there and to the tool table)", tool.Name)
			continue
		}
		a := tool.Annotations
		for _, h := range []struct {
			name string
			got  *bool
			want bool
			// omittable: a missing hint is false.
			omittable bool
		}{{"readOnlyHint", a.ReadOnlyHint, want.readOnly, true},
			{"destructiveHint", a.DestructiveHint, want.destructive, false},
			{"idempotentHint", a.IdempotentHint, want.idempotent, true},
			{"openWorldHint", a.OpenWorldHint, want.openWorld, false}} {
			said := h.got != nil
			wrong := said && *h.got != h.want || !said && h.want
			if wrong || !said && !h.omittable || said && h.omittable && !*h.got {
				t.Errorf("%s: %s = %v, want %v (said only when true: %v)", tool.Name, h.name, deref(h.got), h.want,
					h.omittable)
			}
		}
	}
	if len(res.Tools) < len(v1Tools) {
		t.Errorf("only %d tools listed", len(res.Tools))
	}
}

func deref(b *bool) any {
	if b == nil {
		return nil
	}
	return *b
}

// A tool annotated read-only changes nothing: no VM, no file of the
// workspace, of the host's records or of the (simulated) guests, when
// called on a workspace holding a running instance with a running task.
func TestReadOnlyToolsChangeNothing(t *testing.T) {
	f := newFixture(t, simSpec+"[sandboxes.api]\n")
	id := f.ok("create_instance", map[string]any{"workspace_root": f.root, "ttl_minutes": 30})["instance_id"].(string)
	task := f.ok("start_background_task", map[string]any{"instance_id": id,
		"command": "echo hi; sleep 1000"})["task_id"].(string)
	t.Cleanup(func() { f.call("stop_task", map[string]any{"task_id": task, "force": true}) })
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(fmt.Sprint(f.ok("get_task_logs",
		map[string]any{"task_id": task})["logs"]), "hi"); {
		if time.Now().After(deadline) {
			t.Fatal("the task wrote nothing")
		}
		time.Sleep(10 * time.Millisecond)
	}
	args := map[string]map[string]any{
		"list_instances":            {"include_expired": true},
		"validate_workspace_config": {"workspace_root": f.root},
		"plan":                      {"workspace_root": f.root},
		"get_desired_state":         {"workspace_root": f.root},
		"get_task_status":           {"task_id": task},
		"get_task_logs":             {"task_id": task},
		"docker_ps":                 {"instance_id": id, "all": true},
		"docker_images":             {"instance_id": id},
		"docker_logs":               {"instance_id": id, "container": "web"},
		"validate_image":            {"instance_id": id, "image_name": "app:dev"},
	}
	// The read-only tools of issue 24: agenttools_test.go.
	maps.Copy(args, agentReadOnlyArgs(id, task))
	// And those of issue 31: execsessions_test.go.
	maps.Copy(args, sessionReadOnlyArgs(f, id, task))
	newFakeDocker(t) // the Docker tools talk to a fake docker (docker_fake_test.go), never the host's
	// Polling a running task writes down what it observed, as v1's
	// _refresh_task_state did: the state file's serial moves, nothing
	// else may.
	bookkeeping := map[string]bool{"get_task_status": true, "get_task_logs": true}
	// The sim enforces no network policy: it refuses, and must still change nothing.
	refuses := map[string]string{"get_egress_log": "POLICY_UNSUPPORTED"}
	before, world := snapshot(t, f.root, f.hostDir, f.simDir), f.world()
	for _, name := range slices.Sorted(maps.Keys(f.srv.listing.defs)) {
		if !f.srv.listing.defs[name].hints.readOnly {
			continue
		}
		a, ok := args[name]
		if !ok {
			if registered(t, f, name) {
				t.Errorf("read-only tool %s is not covered here", name)
			}
			continue
		}
		ops := opsSince(t, f, len(opsSince(t, f, 0)()))
		if code, ok := refuses[name]; ok {
			f.fails(name, a, code)
		} else {
			f.ok(name, a)
		}
		for _, op := range ops() {
			if op.Mutating() && op.Op != "exec" { // an exec's writes would show in the guest's files
				t.Errorf("read-only %s did %s %s", name, op.Op, op.Instance)
			}
		}
		after := snapshot(t, f.root, f.hostDir, f.simDir)
		b, a2 := before, after
		if bookkeeping[name] {
			b, a2 = withoutSerial(before), withoutSerial(after)
		}
		if !maps.Equal(b, a2) || !maps.Equal(world, f.world()) {
			t.Errorf("read-only %s changed files or VMs:\n%v\n%v", name, diff(b, a2), f.world())
		}
		before, world = after, f.world()
	}
}

func registered(t *testing.T, f *fixture, name string) bool {
	res, err := f.c.ListTools(context.Background(), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	return slices.ContainsFunc(res.Tools, func(tool mcp.Tool) bool { return tool.Name == name })
}

// opsSince returns a function listing the operations the sim world has
// logged after its first n.
func opsSince(t *testing.T, f *fixture, n int) func() []sim.Op {
	return func() []sim.Op {
		ops, err := sim.ReadLog(f.simDir)
		if err != nil {
			t.Fatal(err)
		}
		return ops[n:]
	}
}

// snapshot is every file under dirs, with its content; the sim's own
// operation log is left out (opsSince reads it), and so is the history,
// where every call is written down.
func snapshot(t *testing.T, dirs ...string) map[string]string {
	out := map[string]string{}
	for _, dir := range dirs {
		filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || filepath.Base(path) == "ops.log" || historyFile(path) {
				return nil
			}
			b, _ := os.ReadFile(path)
			out[path] = string(b)
			return nil
		})
	}
	return out
}

// withoutSerial drops the serial of the state file, which every write of
// the state moves, and its backup, which every write rotates.
func withoutSerial(files map[string]string) map[string]string {
	out := maps.Clone(files)
	for path, text := range out {
		switch filepath.Base(path) {
		case "state.json.backup":
			delete(out, path)
			continue
		case "state.json":
		default:
			continue
		}
		var doc map[string]any
		if json.Unmarshal([]byte(text), &doc) == nil {
			delete(doc, "serial")
			out[path] = mustJSON(doc)
		}
	}
	return out
}

func diff(a, b map[string]string) []string {
	var out []string
	for k := range a {
		if b[k] != a[k] {
			out = append(out, k)
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// The hints that are not "read-only" hold too where a test can see them:
// collect_artifacts renames on a first collision (so calling it again
// adds a copy: not idempotent) but, as v1 did, overwrites i-NAME when
// that is taken too (destructive); destroying twice is a no-op
// (idempotent).
func TestNonReadOnlyHintsHold(t *testing.T) {
	f := newFixture(t, simSpec)
	id := f.ok("create_instance", map[string]any{"workspace_root": f.root, "ttl_minutes": 30})["instance_id"].(string)
	os.MkdirAll(filepath.Join(f.root, "src"), 0o755)
	os.WriteFile(filepath.Join(f.root, "src", "a.txt"), []byte("a"), 0o644)
	f.ok("copy_to_instance", map[string]any{"instance_id": id, "local_path": "src", "remote_path": "/w/src"})
	arts := filepath.Join(f.root, "arts")
	os.MkdirAll(arts, 0o755)
	os.WriteFile(filepath.Join(arts, "a.txt"), []byte("mine"), 0o644)
	args := map[string]any{"instance_id": id, "remote_paths": []any{"/w/src/a.txt"}, "local_dest": "arts"}
	f.ok("collect_artifacts", args)
	mine, _ := os.ReadFile(filepath.Join(arts, "a.txt"))
	entries, _ := os.ReadDir(arts)
	if len(entries) != 2 || string(mine) != "mine" {
		t.Errorf("a first collision: %d files, a.txt %q", len(entries), mine)
	}
	os.WriteFile(filepath.Join(arts, "0-a.txt"), []byte("mine too"), 0o644)
	f.ok("collect_artifacts", args)
	if b, _ := os.ReadFile(filepath.Join(arts, "0-a.txt")); string(b) != "a" ||
		!f.srv.listing.defs["collect_artifacts"].hints.destructive {
		t.Errorf("0-a.txt = %q, hints %+v", b, f.srv.listing.defs["collect_artifacts"].hints)
	}
	first := f.ok("destroy_instance", map[string]any{"instance_id": id})
	again := f.ok("destroy_instance", map[string]any{"instance_id": id})
	if mustJSON(first) != mustJSON(again) || len(f.world()) != 0 ||
		!f.srv.listing.defs["destroy_instance"].hints.idempotent {
		t.Errorf("destroy twice: %v then %v", first, again)
	}
}
