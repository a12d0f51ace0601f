package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/sandboxforge/sbf/internal/names"
	"github.com/sandboxforge/sbf/internal/policy"
)

// enumLike finds a string argument whose description lists its values
// ("One of a, b", "utf8 or base64", "safe (default): …").
var enumLike = regexp.MustCompile(`(?i)\bone of\b|^\w+ or \w+[.;,]|^\w+ \(default\)`)

// unbounded are the numeric arguments with no bound to state, and why.
var unbounded = map[string]string{
	"get_task_logs.tail": "0 or less returns every line",
}

func listedTools(t *testing.T, f *fixture) []map[string]any {
	t.Helper()
	res, err := f.c.ListTools(context.Background(), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(res.Tools)
	var tools []map[string]any
	if err := json.Unmarshal(raw, &tools); err != nil {
		t.Fatal(err)
	}
	return tools
}

// Every tool has a title (top-level, where the protocol and the SDKs'
// display helpers read it), a description saying what it returns, and an
// output schema (a valid JSON Schema of an object); every argument that
// lists its values has an enum holding them; every number has a lower
// bound unless unbounded says why.
func TestEveryToolIsDescribed(t *testing.T) {
	f := newFixture(t, simSpec)
	tools := listedTools(t, f)
	if len(tools) < 40 {
		t.Fatalf("%d tools", len(tools))
	}
	for _, tool := range tools {
		name := tool["name"].(string)
		title, _ := tool["title"].(string)
		if title == "" {
			t.Errorf("%s has no top-level title", name)
		}
		desc, _ := tool["description"].(string)
		if !strings.Contains(desc, "Returns ") {
			t.Errorf("%s: its description does not say what it returns: %q", name, desc)
		}
		// An instance_id argument is described once, where it is made.
		if name == "create_instance" && !strings.Contains(desc, "instance_id, which the other tools take") {
			t.Errorf("create_instance does not say what an instance_id is for: %q", desc)
		}
		out, _ := tool["outputSchema"].(map[string]any)
		if out == nil || out["type"] != "object" {
			t.Errorf("%s has no output schema: %v", name, tool["outputSchema"])
		} else {
			compileSchema(t, name+".out", out)
		}
		props := tool["inputSchema"].(map[string]any)["properties"].(map[string]any)
		for arg, p := range props {
			prop := p.(map[string]any)
			desc, _ := prop["description"].(string)
			if desc == "" && arg != "instance_id" {
				t.Errorf("%s.%s has no description", name, arg)
			}
			types := strings.Join(typeNames(prop["type"]), ",")
			switch {
			case strings.Contains(types, "string") && enumLike.MatchString(desc):
				enum, _ := prop["enum"].([]any)
				if len(enum) == 0 {
					t.Errorf("%s.%s lists its values but has no enum: %q", name, arg, desc)
				}
				for _, v := range enum {
					if s, ok := v.(string); ok && !strings.Contains(desc, s) {
						t.Errorf("%s.%s: enum value %q is not in its description", name, arg, s)
					}
				}
			case strings.Contains(types, "integer") || strings.Contains(types, "number"):
				_, atLeast := prop["minimum"]
				_, above := prop["exclusiveMinimum"]
				if !atLeast && !above && unbounded[name+"."+arg] == "" {
					t.Errorf("%s.%s is a number without a minimum", name, arg)
				}
			}
		}
		compileSchema(t, name+".in", tool["inputSchema"])
	}
}

func typeNames(v any) []string {
	switch x := v.(type) {
	case string:
		return []string{x}
	case []any:
		var out []string
		for _, t := range x {
			out = append(out, t.(string))
		}
		return out
	}
	return nil
}

func compileSchema(t testing.TB, name string, doc any) *jsonschema.Schema {
	t.Helper()
	raw, _ := json.Marshal(doc)
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	c := jsonschema.NewCompiler()
	url := "mem:///" + name + ".json"
	if err := c.AddResource(url, v); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	sch, err := c.Compile(url)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return sch
}

// The bounds the operator sets are the schema's: max_output_bytes at the
// output ceiling, ttl_minutes at the lease ceiling when there is one.
func TestSchemaBoundsFollowTheCeilings(t *testing.T) {
	f := newFixture(t, simSpec)
	f.policy = policy.Policy{Ceilings: policy.Ceilings{
		MaxTTL:         policy.Ceiling[time.Duration]{Value: 90 * time.Minute, Source: "test"},
		MaxOutputBytes: policy.Ceiling[int64]{Value: 1 << 20, Source: "test"},
	}}
	f.start(Settings{SweepInterval: time.Minute, Session: "local"})
	args := map[string]map[string]any{}
	for _, tool := range listedTools(t, f) {
		args[tool["name"].(string)] = tool["inputSchema"].(map[string]any)["properties"].(map[string]any)
	}
	prop := func(tool, arg string) map[string]any { return args[tool][arg].(map[string]any) }
	if p := prop("run_command", "max_output_bytes"); p["maximum"] != float64(1<<20) || p["minimum"] != float64(1) {
		t.Errorf("run_command.max_output_bytes: %v", p)
	}
	for _, tool := range []string{"create_instance", "extend_instance_ttl", "clone_instance"} {
		if p := prop(tool, "ttl_minutes"); p["maximum"] != float64(90) || p["minimum"] != float64(1) {
			t.Errorf("%s.ttl_minutes: %v", tool, p)
		}
	}
	if p := prop("docker_compose", "action"); len(p["enum"].([]any)) != 9 {
		t.Errorf("docker_compose.action: %v", p)
	}
}

// outputSchemas caches each tool's compiled output schema for checkOutput.
var outputSchemas sync.Map

// checkOutput fails the test when a tool's successful result does not
// validate against the output schema the tool advertises, or, for a tool
// whose result is typed, carries a field its full output schema (the one
// the result type declares, echoes of arguments included) does not
// declare: every call any test makes through f.call is checked.
func (f *fixture) checkOutput(name string, res *mcp.CallToolResult) {
	f.t.Helper()
	if res.IsError || res.StructuredContent == nil {
		return
	}
	def := f.srv.listing.defs[name]
	sch, ok := outputSchemas.Load(name)
	if !ok {
		var listed map[string]any
		for _, tool := range f.srv.MCP().ListTools() {
			if tool.Tool.Name == name {
				_ = json.Unmarshal(tool.Tool.RawOutputSchema, &listed)
			}
		}
		if listed == nil {
			f.t.Errorf("%s has no output schema", name)
			return
		}
		sch, _ = outputSchemas.LoadOrStore(name, compileSchema(f.t, name, listed))
	}
	raw, err := json.Marshal(res.StructuredContent)
	if err != nil {
		f.t.Fatalf("%s: %v", name, err)
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		f.t.Fatalf("%s: %v", name, err)
	}
	if err := sch.(*jsonschema.Schema).Validate(v); err != nil {
		f.t.Errorf("%s: the result does not match the output schema: %v\n%s", name, err, clipTo(string(raw), 2000))
	}
	if def.output != nil {
		for _, field := range undeclared(def.output, v) {
			f.t.Errorf("%s: the result carries %s, which its output schema does not declare\n%s", name, field,
				clipTo(string(raw), 2000))
		}
	}
}

// undeclared are a result's fields its schema does not declare, besides
// those any answer may carry (warnings, said once in the instructions; a
// cut answer's response_truncated and response_budget_bytes), and the
// required fields it lacks.
func undeclared(schema map[string]any, result any) []string {
	props, _ := schema["properties"].(map[string]any)
	var out []string
	for field := range result.(map[string]any) {
		switch field {
		case "warnings", "response_truncated", "response_budget_bytes":
			continue
		}
		if _, ok := props[field]; !ok {
			out = append(out, field)
		}
	}
	required, _ := schema["required"].([]string)
	for _, field := range required {
		if _, ok := result.(map[string]any)[field]; !ok {
			out = append(out, "no "+field+" (required)")
		}
	}
	return out
}

// A command killed at its timeout reports as many stderr bytes as the
// stderr it returns holds at least (issue 31: the timeout note was
// returned with stderr_bytes 0).
func TestTimedOutCommandCountsItsStderr(t *testing.T) {
	f := newFixture(t, simSpec)
	id := f.ok("create_instance", map[string]any{"workspace_root": f.root, "auto_bootstrap": false})["instance_id"]
	out := f.ok("run_command", map[string]any{"instance_id": id, "command": "sleep 5", "timeout_seconds": 1})
	stderr, _ := out["stderr"].(string)
	if out["timed_out"] != true || stderr == "" {
		t.Fatalf("a command past its timeout: %v", out)
	}
	if n, _ := out["stderr_bytes"].(float64); int(n) < len(stderr) {
		t.Errorf("stderr_bytes %v, but stderr holds %d bytes: %q", out["stderr_bytes"], len(stderr), stderr)
	}
}

// The snapshot name pattern the schemas state is names.Snapshot's rule:
// a name it allows is one the server takes, and the other way round.
func TestSnapshotNamePatternIsTheServersRule(t *testing.T) {
	r := snapshotName()
	re := regexp.MustCompile(r["pattern"].(string))
	for _, name := range []string{"a", "clean", "v1.2-rc_3", "a.", "a.b.c", "a..b", "..", ".a", "-a", "_a", "a/b",
		"a b", "ä", "", "a-", strings.Repeat("x", 64), strings.Repeat("x", 65), "9", "a.-b", "a._", "a.."} {
		stated := re.MatchString(name) && len(name) <= r["maxLength"].(int)
		if stated != names.Snapshot(name) {
			t.Errorf("%q: the schema says %v, the server %v", name, stated, names.Snapshot(name))
		}
	}
}

// An output schema leaves out only the fields that echo a required
// argument and say nothing more (no description): a field that names
// something new, as create_instance's and clone_instance's instance_id
// (the new instance's, though clone takes the source's), stays listed.
func TestOutputSchemasLeaveOutOnlyEchoes(t *testing.T) {
	f := newFixture(t, simSpec)
	for _, tool := range listedTools(t, f) {
		name := tool["name"].(string)
		full := f.srv.listing.defs[name].output
		listed := tool["outputSchema"].(map[string]any)["properties"].(map[string]any)
		required, _ := tool["inputSchema"].(map[string]any)["required"].([]any)
		for field, p := range full["properties"].(map[string]any) {
			if _, ok := listed[field]; ok {
				continue
			}
			described := p.(map[string]any)["description"] != nil
			if described || !slices.Contains(required, any(field)) {
				t.Errorf("%s's output schema leaves out %s, which is no mere echo of an argument", name, field)
			}
		}
	}
	made := map[string]string{"create_instance": "instance_id", "clone_instance": "instance_id",
		"start_session": "session_id"}
	for _, tool := range listedTools(t, f) {
		name, _ := tool["name"].(string)
		props := tool["outputSchema"].(map[string]any)["properties"].(map[string]any)
		if id := made[name]; id != "" && props[id] == nil {
			t.Errorf("%s does not list the %s it makes: %v", name, id, props)
		}
	}
}
