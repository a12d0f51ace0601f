package mcpserver

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"strings"
	"time"
)

// Output schemas (issue 31): what each tool's structured result holds, so
// an agent knows the fields before its first call and a validating client
// can check them. Every result is an object that may carry more fields
// than listed (additionalProperties: an answer grows, as v1's did, without
// breaking a client) and a "warnings" list (said in the instructions). A field is written
// "name type: description"; types are s(tring), i(nteger), n(umber),
// b(oolean), a(rray), o(bject), * (any), and a trailing ? allows null.
// Nothing is marked required: some fields are left out on some paths
// (a copy that skipped nothing has no warnings), and a client that checks
// would refuse an answer the server meant.

var (
	// The input schemas say what an instance id is, and the descriptions
	// what a command's result holds: every turn of an agent's conversation
	// carries the tool list, so a field is described once.
	instanceIDField = "instance_id s"
	execFields      = []string{instanceIDField, "command s", "exit_code i?", "stdout s", "stderr s", "duration_ms n",
		"timed_out b", "stdout_truncated b", "stderr_truncated b"}
	snapshotFields = []string{instanceIDField, "name s", "backend s",
		"created_at s?", "size_bytes n?: Bytes on disk when the backend says.", "status s"}
	// A sandbox's summary names a new instance (create, clone): its
	// instance_id is described, so it is listed though the call took one.
	summaryFields = []string{
		"instance_id s: Its id, which the other tools take.", "backend s: The backend (driver) running it.",
		"status s",
		"created_at s?: When its VM was made (RFC 3339, UTC).", "expires_at s?: When its lease ends.",
		"ssh_port i?", "workspace_root s", "workspace_id s", "backend_instance_name s: The backend's name for it.",
	}
	portFields = []string{instanceIDField, "port i", "host_port i: The port on 127.0.0.1.",
		"host s", "url s", "status s", "created_at s?", "connections i", "failed_connections i", "bytes_in n",
		"bytes_out n"}
	sessionFields = []string{"session_id s", instanceIDField,
		"command s", "tty b", "status s: running or ended.", "started_at s", "output_bytes n: Output so far.",
		"buffer_dropped_bytes n: Output the bounded buffer let go.", "idle_timeout_seconds i", "stdin_closed b",
		"exit o?: exit_code, reason, timed_out, ended_at once it ended."}
	copyFields = []string{instanceIDField, "local_path s", "remote_path s", "status s",
		"skipped_links a: Links left out because they led outside the destination.",
		"skipped_paths a: Protected paths left out."}
)

var toolOutputs = map[string][]string{
	// Lifecycle.
	"create_instance": append(fields(summaryFields), "auto_bootstrap b", "wait_for_ready b",
		"bootstrap o?: What preparing the workspace did (prepare_workspace's answer)."),
	"list_instances": {"instances a: One row per instance: instance_id, status, phase, expires_at, workspace_root, " +
		"live_exists, reconciliation_drift, last_error …", "backend s", "backend_available b", "backend_version s?",
		"backend_error o?", "reconciliation_error o?"},
	"destroy_instance":    {instanceIDField, "backend s", "status s"},
	"extend_instance_ttl": {instanceIDField, "expires_at s: The new lease end.", "ttl_extended_minutes i"},
	"clone_instance": append(fields(summaryFields), "source_instance_id s: The instance cloned.",
		"snapshot s: The snapshot copied, when one was named."),
	// Declarative.
	"validate_workspace_config": {"valid b", "diagnostics a: What is wrong, each with its key and message.",
		"config o?: The effective configuration.", "sources a", "workspace_root s", "workspace_id s"},
	"plan": {"plan o: The actions, each with its sandbox, action and cause.", "text s: The plan as sbf plan " +
		"prints it.", "workspace_root s"},
	"apply":             {"applied b", "plan o", "sandboxes a: Each sandbox's state after the run.", "workspace_root s"},
	"get_desired_state": {"config o", "managed_overrides o", "sources a", "workspace_root s", "workspace_id s"},
	"prepare_workspace": {instanceIDField, "phase s", "runtime s?", "runtime_ready b", "docker_command s?",
		"services o", "service_readiness o", "connection_env o: The services' variables, secrets redacted.",
		"env_injections a", "include_services b", "wait_for_ready b", "network o?", "plan o?",
		"workspace_paths o?", "workspace_root s", "workspace_id s", "backend_instance_name s"},
	// Data plane.
	"run_command": append(fields(execFields), "stdout_bytes i: Bytes the command wrote to stdout, kept or not.",
		"stderr_bytes i: Bytes it wrote to stderr (and sbf's timeout note), kept or not.",
		"max_output_bytes i: The bytes of each stream kept."),
	"run_ephemeral": append(fields(execFields), "stdout_bytes i", "stderr_bytes i", "max_output_bytes i",
		"backend_instance_name s: The VM it ran in.", "warm_spare b: The VM was a pool's booted spare.",
		"sandbox_ready_ms i: How long the sandbox took to be ready.", "destroyed b: The sandbox is gone again."),
	"copy_to_instance":           {instanceIDField, "local_path s", "remote_path s", "status s"},
	"copy_from_instance":         copyFields,
	"sync_instance_to_workspace": copyFields,
	"sync_workspace_to_instance": {instanceIDField, "local_path s", "remote_path s", "archive_bytes n",
		"exclude a", "files_sent i", "files_unchanged i", "files_deleted i", "status s"},
	"collect_artifacts": {instanceIDField, "local_dest s", "artifacts a: Each path collected and where it went.",
		"skipped_links a", "skipped_paths a"},
	// Guest files.
	"read_file": {instanceIDField, "path s", "content s", "encoding s: utf8 or base64.", "size n: The file's size.",
		"offset n", "bytes_read n", "truncated b: More follows.", "next_offset n: Where to read on."},
	"write_file": {instanceIDField, "path s", "bytes_written n", "mode s", "status s"},
	"list_files": {instanceIDField, "path s", "recursive b", "entries a: Each entry's path, type, size, mode and " +
		"modified.", "count i", "truncated b"},
	"stat_path":   {instanceIDField, "path s", "exists b", "type s?", "size n?", "mode s?", "modified s?"},
	"make_dir":    {instanceIDField, "path s", "created b"},
	"remove_path": {instanceIDField, "path s", "removed b"},
	// Exec sessions: every answer carries the session's view.
	"start_session": fields(sessionFields),
	"read_session": append(fields(sessionFields), "events a: Output after the cursor: seq, stream, offset, and text "+
		"(or data_base64 when it is not UTF-8).", "cursor n", "next_cursor n: The cursor of the next read.",
		"dropped_bytes n: Output dropped before this reader read it.", "done b: The session ended and all was read."),
	"write_session":  append(fields(sessionFields), "bytes_written i"),
	"signal_session": append(fields(sessionFields), "signal s", "delivered s: How the signal was delivered."),
	"close_session":  append(fields(sessionFields), "closed b"),
	// Guest paths.
	"move_path":   {instanceIDField, "src s", "dst s", "moved b"},
	"copy_path":   {instanceIDField, "src s", "dst s", "dst_instance_id s?", "copied b"},
	"path_exists": {instanceIDField, "path s", "exists b", "type s?: file, dir, link or other."},
	// Background tasks.
	"start_background_task": {instanceIDField, "task_id s: The id get_task_status and get_task_logs take.",
		"pid i?", "log_path s", "status s"},
	"get_task_status": {instanceIDField, "task_id s", "status s", "pid i?", "exit_code i?", "log_path s",
		"created_at s?", "started_at s?", "finished_at s?", "error_message s?"},
	"get_task_logs": {instanceIDField, "task_id s", "status s", "logs s: The last lines (v1's tail form).",
		"tail i", "output s: With a cursor: the output from cursor on, as text.",
		"output_base64 s: The same when it is not UTF-8.", "cursor n", "next_cursor n: The cursor to read on from.",
		"size n: Bytes of output so far.", "done b: The task ended and everything was read.", "saved_output b"},
	"stop_task": {instanceIDField, "task_id s", "status s", "exit_code i?"},
	// Docker (v1's shapes).
	"validate_image": {instanceIDField, "valid b", "recommendation s", "reasons a", "expected_image_tag s?",
		"image_metadata o?", "workspace_state o?", "ignored_checks a"},
	"docker_build": append(fields(execFields), "image_tag s", "cache_hit b", "cache_strategy s?",
		"cached_image_tag s?", "validation o?", "workspace_state o?"),
	"docker_run":  append(fields(execFields), "container s?"),
	"docker_exec": append(fields(execFields), "container s"),
	"docker_logs": append(fields(execFields), "container s"),
	"docker_compose": append(fields(execFields), "project_dir s", "action s", "compose_follow b",
		"compose_since s?", "compose_tail i?", "bridge o?", "connection_env o?"),
	"docker_ps":      append(fields(execFields), "all b"),
	"docker_images":  execFields,
	"docker_cleanup": append(fields(execFields), "mode s"),
	// Snapshots and clones.
	"snapshot_instance": snapshotFields,
	"restore_snapshot":  snapshotFields,
	"delete_snapshot":   snapshotFields,
	"export_snapshot":   append(fields(snapshotFields), "local_path s: The host file written."),
	"import_snapshot":   append(fields(snapshotFields), "local_path s"),
	"list_snapshots": {instanceIDField, "backend s", "snapshots a: Each with name, created_at and size_bytes.",
		"count i"},
	// Issue 24's agent tools.
	"expose_port":        portFields,
	"unexpose_port":      portFields,
	"list_exposed_ports": {"ports a: Each forward as expose_port answers it.", "count i"},
	"get_instance_stats": {instanceIDField, "sandbox s", "driver s", "cpu o", "memory o", "disk o", "load o?",
		"processes i?", "uptime_seconds n?", "lease o?", "last_command o?", "shared_with_host b",
		"partial b: Some figures could not be read."},
	"get_history": {"events a: The newest calls first, each with its tool, time, outcome and detail.", "count i",
		"workspace_root s", "instance_id s?"},
	"health":         {"healthy b", "sandboxes a: Each sandbox's phase, drift and problems.", "workspace_root s"},
	"enable_toolset": {"toolsets a: Each toolset's name, about, tools and whether they are listed."},
	"get_egress_log": {instanceIDField, "sandbox s", "entries a: The newest egress decisions: destination, " +
		"verdict, time.", "count i"},
}

// withoutEchoes is a tool's output schema as listed: without the fields
// that only echo a required argument (an instance_id, a path, a command):
// the caller knows them, the answer still carries them (additionalProperties
// is true) and every turn of a conversation carries the list. A field
// with a description says more than an echo (a clone's instance_id is the
// new instance's) and stays.
func withoutEchoes(schema map[string]any, required []string) json.RawMessage {
	props := maps.Clone(schema["properties"].(map[string]any))
	for _, arg := range required {
		if p, ok := props[arg].(map[string]any); ok && p["description"] == nil {
			delete(props, arg)
		}
	}
	raw, err := json.Marshal(map[string]any{"type": "object", "properties": props})
	if err != nil {
		panic(fmt.Sprintf("encoding an output schema: %v", err))
	}
	return raw
}

// fields copies a shared list so an append never writes into another
// tool's.
func fields(f []string) []string { return append([]string(nil), f...) }

var outputTypes = map[string][]string{"s": {"string"}, "i": {"integer"}, "n": {"number"}, "b": {"boolean"},
	"a": {"array"}, "o": {"object"}}

// outputSchema renders a tool's field list; a tool without one is a
// programming error (a test lists every registered tool).
func outputSchema(tool string) map[string]any {
	list, ok := toolOutputs[tool]
	if !ok {
		return nil
	}
	// warnings (what sbf corrected or left out; the call still succeeded)
	// may come with any answer: the instructions say so once, not every
	// output schema.
	props := map[string]any{}
	for _, f := range list {
		decl, desc, _ := strings.Cut(f, ": ")
		name, typ, _ := strings.Cut(decl, " ")
		prop := map[string]any{}
		nullable := strings.HasSuffix(typ, "?")
		typ = strings.TrimSuffix(typ, "?")
		if typ != "*" {
			types, ok := outputTypes[typ]
			if !ok {
				panic(fmt.Sprintf("tool %s: field %s has no type %q", tool, name, typ))
			}
			if nullable {
				types = append(fields(types), "null")
			}
			if len(types) == 1 {
				prop["type"] = types[0]
			} else {
				prop["type"] = types
			}
		}
		if desc != "" {
			prop["description"] = desc
		}
		props[name] = prop
	}
	return map[string]any{"type": "object", "properties": props}
}

// resultSchema renders the output schema of a tool whose handler answers
// R (a pointer to a result struct): each JSON field of the struct, its
// embedded structs' included as encoding/json flattens them, with its
// JSON type ("null" too for a pointer) and its `jsonschema` tag as its
// description. The value a handler returns is that struct, so the schema
// cannot say other than the answer. Nested objects and arrays are named by
// type only: every turn of a conversation carries the list. Nothing is
// required and additionalProperties stays JSON Schema's default (true):
// an answer may grow, as v1's did, without breaking a client; "warnings"
// may come with any answer, which the instructions say once.
func resultSchema(t reflect.Type) map[string]any {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		panic(fmt.Sprintf("a tool result is a struct, not %s", t))
	}
	props := map[string]any{}
	resultFields(t, props)
	return map[string]any{"type": "object", "properties": props}
}

func resultFields(t reflect.Type, props map[string]any) {
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if f.Anonymous && name == "" {
			resultFields(f.Type, props)
			continue
		}
		if !f.IsExported() || name == "-" || name == "warnings" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		if _, twice := props[name]; twice { // encoding/json would drop both
			panic(fmt.Sprintf("result %s: two fields named %s", t, name))
		}
		prop := map[string]any{}
		if typ := jsonType(f.Type); typ != nil {
			prop["type"] = typ
		}
		if desc := f.Tag.Get("jsonschema"); desc != "" {
			prop["description"] = desc
		}
		props[name] = prop
	}
}

var timeType = reflect.TypeFor[time.Time]()

// jsonType is the JSON Schema type a Go value encodes as; nil for any.
func jsonType(t reflect.Type) any {
	if t.Kind() == reflect.Pointer {
		if elem, ok := jsonType(t.Elem()).(string); ok {
			return []string{elem, "null"}
		}
		return nil
	}
	switch {
	case t == timeType:
		return "string"
	case t.Implements(reflect.TypeFor[json.Marshaler]()):
		return nil
	}
	switch t.Kind() {
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "integer"
	case reflect.Float32, reflect.Float64:
		return "number"
	case reflect.Slice, reflect.Array:
		return "array"
	case reflect.Map, reflect.Struct:
		return "object"
	}
	return nil
}
