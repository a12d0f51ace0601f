package mcpserver

import (
	"testing"
	"time"

	"github.com/sandboxforge/sbf/internal/policy"
	"github.com/sandboxforge/sbf/spec"
)

// The operator's ceilings bind every tool argument: a workspace saying 500
// instances and 2000h under 1 and 1h gets one instance (an overrides
// argument cannot raise it), a 2h lease is TTL_INVALID, run_command keeps
// at most the output ceiling whatever max_output_bytes says, and the
// policy resource shows each ceiling, its source and the value in effect.
func TestToolArgumentsStayUnderTheOperatorsCeilings(t *testing.T) {
	f := newFixture(t, simSpec+"[lease]\nmax_instances = 500\nmax_ttl = \"2000h\"\nmax_lifetime = \"3000h\"\n")
	f.policy = policy.Policy{Ceilings: policy.Ceilings{
		MaxInstances:   policy.Ceiling[int]{Value: 1, Source: "global config C [policy] max_instances"},
		MaxTTL:         policy.Ceiling[time.Duration]{Value: time.Hour, Source: "env MAX_TTL_MINUTES"},
		MaxOutputBytes: policy.Ceiling[int64]{Value: 1 << 20, Source: "global config C [policy] max_output_bytes"},
	}.Defaulted()}
	f.start(Settings{SweepInterval: time.Minute, Session: "local"})
	ttl := f.fails("create_instance", map[string]any{"workspace_root": f.root, "ttl_minutes": 120}, "TTL_INVALID")
	if d := ttl["details"].(map[string]any); d["max_ttl_minutes"] != 60.0 ||
		d["max_ttl_source"] != "env MAX_TTL_MINUTES" {
		t.Errorf("TTL_INVALID details = %v", d)
	}
	id := f.ok("create_instance", map[string]any{"workspace_root": f.root})["instance_id"].(string)
	raise := map[string]any{"lease": map[string]any{"max_instances": 9}}
	f.fails("create_instance", map[string]any{"workspace_root": f.root, "overrides": raise}, "INSTANCE_LIMIT_EXCEEDED")

	run := f.ok("run_command", map[string]any{"instance_id": id, "max_output_bytes": 2_000_000_000,
		"command": "head -c 20000000 /dev/zero | tr '\\0' x"})
	if out := run["stdout"].(string); len(out) != 1<<20 || run["max_output_bytes"] != float64(1<<20) ||
		run["stdout_truncated"] != true || run["stdout_bytes"] != 20_000_000.0 {
		t.Errorf("run_command kept %d bytes: %v %v %v", len(out), run["max_output_bytes"], run["stdout_truncated"],
			run["stdout_bytes"])
	}

	_, wsID, _ := spec.WorkspaceIdentity(f.root)
	pol, err := readResource(t, f.c, "sbf://workspaces/"+wsID+"/policy")
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]map[string]any{}
	for _, row := range pol["ceilings"].([]any) {
		r := row.(map[string]any)
		rows[r["key"].(string)] = r
	}
	if r := rows["max_instances"]; r["ceiling"] != 1.0 || r["value"] != 1.0 ||
		r["source"] != "global config C [policy] max_instances" || r["value_from"] != spec.FromCeiling {
		t.Errorf("max_instances row = %v", r)
	}
	if r := rows["max_ttl"]; r["ceiling"] != "1h" || r["source"] != "env MAX_TTL_MINUTES" {
		t.Errorf("max_ttl row = %v", r)
	}
	if r := rows["max_lifetime"]; r["ceiling"] != nil || r["value"] != "125d" {
		t.Errorf("max_lifetime row = %v", r)
	}
	if r := rows["max_copy_bytes"]; r["source"] != policy.SourceDefault ||
		r["value"] != float64(policy.DefaultMaxCopyBytes) {
		t.Errorf("max_copy_bytes row = %v", r)
	}
}
