package mcpserver

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/internal/policy"
	"github.com/sandboxforge/sbf/sandbox"
	"github.com/sandboxforge/sbf/spec"
)

// What a tool's listing says beyond its Go types (issue 31: schemas an LLM
// can rely on): the output schema (outputs.go), and for each
// argument with a fixed set of values its enum, for each bounded number
// its bounds. Each bound is the one the handler (or the operator's
// ceiling) enforces, never a wider one: a call the schema allows is one
// the server may accept. The server still checks arguments against the
// schema without these (args.go), so v1's error codes for out-of-range
// values (TTL_INVALID …) are kept.

// argRule is what an argument's schema gains: enum, bounds (exclusive
// for a size, which must be positive), a string's length and pattern, an
// array's fewest items, an object's fixed properties.
type argRule map[string]any

// signalNames are the signals a session may be sent, as signal_session
// takes them.
func signalNames() []string {
	out := make([]string, len(sandbox.SessionSignals))
	for i, s := range sandbox.SessionSignals {
		out[i] = string(s)
	}
	return out
}

// waitMS is how long a read may wait for output, in milliseconds.
func waitMS() argRule { return bounds(0, float64(sandbox.MaxSessionWait/time.Millisecond)) }

func bounds(lo, hi float64) argRule { return argRule{"minimum": lo, "maximum": hi} }
func atLeast(lo float64) argRule    { return argRule{"minimum": lo} }
func atMost(hi float64) argRule     { return argRule{"maximum": hi} }
func positive() argRule             { return argRule{"exclusiveMinimum": 0} }
func longest(n int) argRule         { return argRule{"maxLength": n} }
func enum(values ...string) argRule { return argRule{"enum": values} }

// guestPath is a guest path argument, as sandbox.CheckGuestPath takes it:
// not empty, at most MaxGuestPath bytes (so at most as many characters).
func guestPath() argRule { return argRule{"minLength": 1, "maxLength": sandbox.MaxGuestPath} }

// snapshotName is drivers.CheckSnapshotName's rule (names.Snapshot) in
// JSON Schema: a letter or digit, then letters, digits, '.', '-', '_'
// with no "..", at most 64 in all.
func snapshotName() argRule {
	return argRule{"maxLength": drivers.MaxSnapshotName, "pattern": `^[A-Za-z0-9](\.?[A-Za-z0-9_-])*\.?$`}
}

// validateImageChecks is validate_image's checks object, stated whole.
func validateImageChecks() argRule {
	return argRule{"properties": map[string]any{
		"git_commit":    map[string]any{"type": "boolean"},
		"dependencies":  map[string]any{"type": "boolean"},
		"git_dirty":     map[string]any{"type": []string{"string", "boolean"}, "enum": enumOf(dirtyPolicies, true, false)},
		"max_age_hours": map[string]any{"type": []string{"number", "null"}, "minimum": 0},
	}}
}

func enumOf(strs []string, extra ...any) []any {
	out := make([]any, 0, len(strs)+len(extra))
	for _, s := range strs {
		out = append(out, s)
	}
	return append(out, extra...)
}

// ceilingRules are the bounds the operator's ceilings set: the longest
// lease (the operator's ceiling, else a workspace's default [lease]
// max_ttl; a workspace may set a shorter one, which no single schema can
// say), the largest VM a call may ask for (VM_SIZE_LIMIT_EXCEEDED past
// [policy] max_cpus, max_memory_gib, max_disk_gib) and the most output a
// command keeps.
func ceilingRules(c policy.Ceilings, defaultMaxTTL time.Duration) map[string]map[string]argRule {
	c = c.Defaulted()
	out := map[string]map[string]argRule{
		"run_command":     {"max_output_bytes": bounds(1, float64(c.MaxOutputBytes.Value))},
		"run_ephemeral":   {"max_output_bytes": bounds(1, float64(c.MaxOutputBytes.Value))},
		"create_instance": {},
	}
	maxTTL := defaultMaxTTL
	if c.MaxTTL.Value > 0 {
		maxTTL = c.MaxTTL.Value
	}
	ttl := bounds(1, float64(maxTTL/time.Minute))
	for _, tool := range []string{"create_instance", "extend_instance_ttl", "clone_instance"} {
		if out[tool] == nil {
			out[tool] = map[string]argRule{}
		}
		out[tool]["ttl_minutes"] = ttl
	}
	for _, tool := range []string{"create_instance", "run_ephemeral"} {
		if c.MaxCPUs.Value > 0 {
			out[tool]["cpus"] = atMost(float64(c.MaxCPUs.Value))
		}
		if c.MaxMemoryGiB.Value > 0 {
			out[tool]["memory_gib"] = atMost(c.MaxMemoryGiB.Value)
		}
	}
	if c.MaxDiskGiB.Value > 0 {
		out["create_instance"]["disk_gib"] = atMost(c.MaxDiskGiB.Value)
	}
	return out
}

// describeTool adds the output schema and the argument rules to a tool
// about to be registered.
func (s *Server) describeTool(tool *mcp.Tool, output map[string]any, args map[string]argRule) {
	var schema map[string]any
	if err := json.Unmarshal(tool.RawInputSchema, &schema); err != nil {
		panic(fmt.Sprintf("tool %s: reading its input schema: %v", tool.Name, err))
	}
	if output != nil {
		var required []string
		listed, _ := schema["required"].([]any)
		for _, arg := range listed {
			name, _ := arg.(string)
			required = append(required, name)
		}
		tool.RawOutputSchema = withoutEchoes(output, required)
	}
	props, _ := schema["properties"].(map[string]any)
	apply := func(rules map[string]argRule) {
		for arg, r := range rules {
			prop, ok := props[arg].(map[string]any)
			if !ok {
				panic(fmt.Sprintf("tool %s: a rule for %s, which is no argument", tool.Name, arg))
			}
			maps.Copy(prop, r)
		}
	}
	for _, p := range props {
		advertiseUnnulled(p)
	}
	apply(args)
	apply(ceilingRules(s.cfg.Policy.Ceilings, spec.Defaults(s.cfg.Host).Lease.MaxTTL.Std())[tool.Name])
	raw, err := json.Marshal(schema)
	if err != nil {
		panic(fmt.Sprintf("tool %s: encoding its input schema: %v", tool.Name, err))
	}
	tool.RawInputSchema = raw
}

// advertiseUnnulled lists an optional argument the server also takes as
// null (a pointer field: ["null", "integer"]) as its type alone: leaving
// it out means the same, and a call the listed schema allows is still one
// the server accepts; every turn of a conversation carries the list.
func advertiseUnnulled(prop any) {
	p, _ := prop.(map[string]any)
	types, _ := p["type"].([]any)
	if len(types) != 2 || !slices.Contains(types, any("null")) {
		return
	}
	p["type"] = types[slices.IndexFunc(types, func(t any) bool { return t != "null" })]
}
