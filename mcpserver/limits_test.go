package mcpserver

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sandboxforge/sbf/internal/coded"
	"github.com/sandboxforge/sbf/internal/policy"
	"github.com/sandboxforge/sbf/internal/testutil"
)

// clamped are the bounds a value past which is kept to the bound rather
// than refused, and the result field that shows the bound applied ("" when
// the result shows none).
var clamped = map[string]string{
	"run_command.max_output_bytes":   "max_output_bytes",
	"run_ephemeral.max_output_bytes": "max_output_bytes",
	"read_session.max_bytes":         "",
	"read_session.wait_ms":           "",
	"get_task_logs.max_bytes":        "",
	"get_task_logs.wait_ms":          "",
}

// unprobed are the tools with numeric arguments the walk does not call,
// and why.
var unprobed = map[string]string{
	"docker_compose": "the sim has no Docker (RUNTIME_NOT_READY before any argument is read); tail has no maximum",
	"docker_exec":    "the sim has no Docker; timeout_seconds has no maximum",
	"docker_logs":    "the sim has no Docker; tail has no maximum",
	"validate_image": "the sim has no Docker; checks.max_age_hours has no maximum",
}

// boundOf is the limit a refusal of arg names, if it names one: the
// engine's lease and VM size refusals and the tools' own argument checks.
func boundOf(out map[string]any, arg string) (float64, bool) {
	d, _ := out["details"].(map[string]any)
	var v any
	switch out["error_code"] {
	case coded.TTLInvalid:
		v = d["max_ttl_minutes"]
	case coded.VMSizeLimit:
		v = d["max_"+arg]
	case coded.InvalidArguments:
		if d["field"] == arg {
			v = d["max"]
		}
	}
	f, ok := v.(float64)
	return f, ok
}

// refusedFor says whether a failed call was refused because of arg.
func refusedFor(out map[string]any, arg string) bool {
	d, _ := out["details"].(map[string]any)
	if _, ok := boundOf(out, arg); ok {
		return true
	}
	return d["field"] == arg
}

// The limits a schema states are the ones the server enforces, under every
// ceiling an operator can set (issue 42.2): for each numeric argument, a
// value past its stated maximum (or, with none stated, a very large one)
// is refused naming exactly the stated bound (or for another reason: an
// unexposed port), or kept to it where clamped says so; a value the schema allows (its minimum, its maximum) is never
// refused for that argument. A limit the server refuses by that the schema
// does not state fails here.
func TestStatedLimitsAreTheServers(t *testing.T) {
	testutil.WithoutRace(t, "it sends 8 MiB arguments, a call at a time")
	// A long string's length bound stated alike under both walks is probed
	// once: write_file's 8 MiB content takes 7 s a call under the race detector.
	lengthsProbed := map[string]bool{}
	t.Run("ceilings", func(t *testing.T) {
		walkLimits(t, lengthsProbed, policy.Ceilings{
			MaxTTL:         policy.Ceiling[time.Duration]{Value: 90 * time.Minute, Source: "test"},
			MaxCPUs:        policy.Ceiling[int]{Value: 2, Source: "test"},
			MaxMemoryGiB:   policy.Ceiling[float64]{Value: 3, Source: "test"},
			MaxDiskGiB:     policy.Ceiling[float64]{Value: 20, Source: "test"},
			MaxOutputBytes: policy.Ceiling[int64]{Value: 1 << 20, Source: "test"},
		})
	})
	t.Run("defaults", func(t *testing.T) { walkLimits(t, lengthsProbed, policy.Ceilings{}) })
}

func walkLimits(t *testing.T, lengthsProbed map[string]bool, ceilings policy.Ceilings) {
	f := newFixture(t, simSpec+"[lease]\nmax_instances = 50\n")
	f.policy = policy.Policy{Ceilings: ceilings}
	f.start(Settings{SweepInterval: time.Minute, Session: "local"})
	id := f.ok("create_instance", map[string]any{"workspace_root": f.root, "auto_bootstrap": false})["instance_id"]
	f.ok("write_file", map[string]any{"instance_id": id, "path": "f.txt", "content": "hello"})
	session := f.startSession(map[string]any{"instance_id": id, "command": "echo hi"})
	session.until("hi")
	task := f.ok("start_background_task", map[string]any{"instance_id": id, "command": "echo hi"})["task_id"]
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); {
		if f.ok("get_task_status", map[string]any{"instance_id": id, "task_id": task})["status"] != "running" {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	base := map[string]map[string]any{
		"create_instance":     {"workspace_root": f.root, "auto_bootstrap": false},
		"run_ephemeral":       {"workspace_root": f.root, "command": "true"},
		"extend_instance_ttl": {"instance_id": id},
		"clone_instance":      {"instance_id": id},
		"fork_instance":       {"instance_id": id},
		"run_command":         {"instance_id": id, "command": "true"},
		"read_file":           {"instance_id": id, "path": "f.txt"},
		"list_files":          {"instance_id": id, "path": "."},
		"write_file":          {"instance_id": id, "path": "g.txt", "content": "x"},
		"start_session":       {"instance_id": id, "command": "true"},
		"read_session":        {"session_id": session.id},
		"get_task_logs":       {"instance_id": id, "task_id": task, "cursor": 0},
		"get_history":         {},
		"get_egress_log":      {"instance_id": id},
		"expose_port":         {"instance_id": id, "port": 8080},
		"unexpose_port":       {"instance_id": id},
		"stat_path":           {"instance_id": id},
		"path_exists":         {"instance_id": id},
		"remove_path":         {"instance_id": id},
		"make_dir":            {"instance_id": id},
		"move_path":           {"instance_id": id, "src": "no-src", "dst": "no-dst"},
		"copy_path":           {"instance_id": id, "src": "no-src", "dst": "no-dst"},
		"collect_artifacts":   {"instance_id": id, "remote_paths": []any{"f.txt"}, "local_dest": "artifacts"},
		"snapshot_instance":   {"instance_id": id},
		"restore_snapshot":    {"instance_id": id},
		"delete_snapshot":     {"instance_id": id},
		"export_snapshot":     {"instance_id": id, "local_path": "snap.export"},
		"import_snapshot":     {"instance_id": id, "local_path": "nothing.export"},
	}
	call := func(tool, arg string, v any) (map[string]any, bool) {
		args := map[string]any{}
		for k, x := range base[tool] {
			args[k] = x
		}
		args[arg] = v
		return f.call(tool, args)
	}
	probed := 0
	for _, tool := range listedTools(t, f) {
		name := tool["name"].(string)
		props := tool["inputSchema"].(map[string]any)["properties"].(map[string]any)
		for _, arg := range slices.Sorted(func(yield func(string) bool) {
			for k := range props {
				if !yield(k) {
					return
				}
			}
		}) {
			prop := props[arg].(map[string]any)
			types := strings.Join(typeNames(prop["type"]), ",")
			numeric := strings.Contains(types, "integer") || strings.Contains(types, "number")
			maxLen, hasLen := prop["maxLength"].(float64)
			_, hasMinLen := prop["minLength"].(float64)
			_, hasMinItems := prop["minItems"].(float64)
			if !numeric && !hasLen && !hasMinLen && !hasMinItems {
				continue
			}
			if _, ok := base[name]; !ok {
				if unprobed[name] == "" {
					t.Errorf("%s.%s: a bounded argument of a tool the walk does not call", name, arg)
				}
				continue
			}
			key := name + "." + arg
			probed++
			if hasMinLen || hasMinItems { // nothing: an empty string or list
				var none any = ""
				if hasMinItems {
					none = []any{}
				}
				if out, isErr := call(name, arg, none); !isErr || !refusedFor(out, arg) {
					t.Errorf("%s: %v (under its minimum) was not refused for it: %v", key, none,
						clipTo(fmt.Sprint(out), 400))
				}
			}
			if hasMinItems {
				continue
			}
			if stated := fmt.Sprintf("%s maxLength %v", key, maxLen); hasLen && lengthsProbed[stated] {
				continue
			} else if hasLen { // a string: one character past its length
				lengthsProbed[stated] = maxLen > 64<<10
				out, isErr := call(name, arg, strings.Repeat("x", int(maxLen)+1))
				if bound, ok := boundOf(out, arg); !isErr || !ok || bound != maxLen {
					t.Errorf("%s: %v characters (past maxLength %v): %v", key, maxLen+1, maxLen, clipTo(fmt.Sprint(out), 400))
				}
				if out, isErr := call(name, arg, strings.Repeat("x", int(maxLen))); isErr && refusedFor(out, arg) {
					t.Errorf("%s: refused at its maxLength %v: %v", key, maxLen, clipTo(fmt.Sprint(out), 400))
				}
				continue
			}
			stated, hasMax := prop["maximum"].(float64)
			past := float64(1 << 20)
			if hasMax {
				past = stated + 1
				if !strings.Contains(types, "integer") && stated != math.Trunc(stated) {
					past = stated + 0.5
				}
			}
			out, isErr := call(name, arg, past)
			bound, bounded := boundOf(out, arg)
			switch {
			case isErr && bounded && (!hasMax || bound != stated):
				t.Errorf("%s: %v refused past %v, but the schema states maximum %v: %v", key, past, bound,
					prop["maximum"], clipTo(fmt.Sprint(out), 400))
			case hasMax && !isErr:
				field, ok := clamped[key]
				if !ok {
					t.Errorf("%s: %v, past its maximum %v, was accepted: %v", key, past, stated, clipTo(fmt.Sprint(out), 400))
				} else if field != "" && out[field] != stated {
					t.Errorf("%s: %v kept to %v, not the stated %v", key, past, out[field], stated)
				}
			}
			allowed := []float64{}
			if hasMax {
				allowed = append(allowed, stated)
			}
			if lo, ok := prop["minimum"].(float64); ok {
				allowed = append(allowed, lo)
			}
			if lo, ok := prop["exclusiveMinimum"].(float64); ok {
				allowed = append(allowed, lo+0.5)
			}
			for _, v := range allowed {
				if out, isErr := call(name, arg, v); isErr && refusedFor(out, arg) {
					t.Errorf("%s: %v, which the schema allows, was refused: %v", key, v, clipTo(fmt.Sprint(out), 400))
				}
			}
		}
	}
	if probed < 20 {
		t.Errorf("only %d arguments probed", probed)
	}
}
