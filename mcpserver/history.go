package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/sandboxforge/sbf/internal/coded"
	"github.com/sandboxforge/sbf/reconcile"
	"github.com/sandboxforge/sbf/sandbox"
	"github.com/sandboxforge/sbf/spec"
	"github.com/sandboxforge/sbf/state"
)

// Every tool call that names an instance (in its arguments or its result)
// is recorded in that instance's workspace history (package sandbox),
// unless the workspace is not one this server serves: a call never writes
// where it may not read.

// audited names an MCP lifecycle tool for the engine's record of it.
func audited(tool string) *reconcile.Audit { return &reconcile.Audit{Door: "mcp", Tool: tool} }

// Arguments the history names: what ran goes to command, what was read or
// written to path, the rest (sorted) to detail. Contents never do.
var (
	commandArgs = []string{"command"}
	pathArgs    = []string{"path", "remote_path"}
	detailArgs  = []string{"local_path", "local_dest", "remote_paths", "port", "host_port", "container", "image",
		"image_tag", "action", "task_id", "recursive", "force", "name", "snapshot"}
)

func (s *Server) recordCall(ctx context.Context, tool string, rawArgs any, out any, err error, start time.Time) {
	if s.listing.defs[tool].unrecorded {
		return
	}
	args, _ := rawArgs.(map[string]any)
	var facts callFacts
	if f, ok := out.(factual); ok && err == nil {
		facts = f.facts()
	}
	id, _ := args["instance_id"].(string)
	if id == "" {
		id = facts.instanceID
	}
	entry, found := noted(ctx, instancesOf, id) // as the call found it
	if !found {
		entry, found = s.index.Lookup(id)
	}
	if id == "" || !found {
		return
	}
	ws, used := workspaceUsed(ctx, entry.WorkspaceRoot) // resolved and allowed by the call
	if !used && s.allowed(ctx, entry.WorkspaceRoot) != nil {
		return
	}
	ev := sandbox.Event{Time: start.UTC(), Door: "mcp", Tool: tool, Sandbox: entry.Sandbox, InstanceID: id,
		Command: firstString(args, commandArgs), Path: firstString(args, pathArgs), Detail: detail(args),
		DurationMS: s.cfg.Engine.Clock.Now().Sub(start).Milliseconds()}
	ev.ExitCode, ev.Bytes = facts.exitCode, facts.bytes
	if err != nil {
		c := asToolError(err)
		ev.ErrorCode, ev.Error = c.Code, c.Message
	}
	var redact func(string) string
	var werr error
	if !used {
		ws, werr = s.options(entry.WorkspaceRoot, nil)
	}
	if werr == nil {
		r, loaded := noted(ctx, specsOf, ws.Root)
		if !loaded {
			r, _ = s.cfg.Engine.LoadShared(ws)
		}
		redact = sandbox.Redactor(r, s.cfg.Engine.Env.Getenv)
	} else {
		redact = sandbox.Redactor(nil, nil)
	}
	// The history must not fail the call it records.
	_ = sandbox.WorkspaceHistory(entry.WorkspaceRoot).Append(ctx, ev, redact)
}

// asMap is a result as JSON sees it.
func asMap(out any) map[string]any {
	if m, ok := out.(map[string]any); ok {
		return m
	}
	var m map[string]any
	if raw, err := json.Marshal(out); err == nil {
		json.Unmarshal(raw, &m)
	}
	return m
}

func firstString(args map[string]any, keys []string) string {
	for _, k := range keys {
		if v, ok := args[k].(string); ok && v != "" {
			return v
		}
	}
	return ""
}

// detail names the other arguments, and only the names of env variables.
func detail(args map[string]any) string {
	var parts []string
	for _, k := range detailArgs {
		if v, ok := args[k]; ok && v != nil {
			parts = append(parts, fmt.Sprintf("%s=%v", k, v))
		}
	}
	if env, ok := args["env"].(map[string]any); ok && len(env) > 0 {
		parts = append(parts, "env="+strings.Join(slices.Sorted(maps.Keys(env)), ","))
	}
	return strings.Join(parts, " ")
}

// callFacts is what a result adds to its history line: the instance it
// acted on (for a call that named a session or a task, not an instance),
// its exit code, the bytes it moved. A result says them itself (factual),
// so a command's megabytes are never encoded again to be read.
type callFacts struct {
	instanceID string
	exitCode   *int
	bytes      int64
}

type factual interface{ facts() callFacts }

func (r *execResult) facts() callFacts { return callFacts{r.InstanceID, &r.ExitCode, 0} }
func (r *runResult) facts() callFacts {
	return callFacts{r.InstanceID, &r.ExitCode, r.StdoutBytes + r.StderrBytes}
}
func (r *readFileResult) facts() callFacts  { return callFacts{bytes: int64(r.BytesRead)} }
func (r *writeFileResult) facts() callFacts { return callFacts{bytes: int64(r.BytesWritten)} }
func (r *syncResult) facts() callFacts      { return callFacts{bytes: r.Archive} }
func (r *sessionResult) facts() callFacts   { return callFacts{instanceID: r.InstanceID} }
func (r *writeSessionResult) facts() callFacts {
	return callFacts{r.InstanceID, nil, int64(r.BytesWritten)}
}
func (r *taskHead) facts() callFacts { return callFacts{instanceID: r.InstanceID} }
func (r *copyPathResult) facts() callFacts {
	if r.copyAcross == nil {
		return callFacts{}
	}
	return callFacts{bytes: r.ArchiveBytes}
}

type historyArgs struct {
	InstanceID    string `json:"instance_id,omitempty" jsonschema:"Only this instance's calls (default: every sandbox of the workspace)."`
	WorkspaceRoot string `json:"workspace_root,omitempty" jsonschema:"The workspace whose history to read, when no instance_id names it (default: the server's)."`
	Limit         *int   `json:"limit,omitempty" default:"100" jsonschema:"The newest calls to return."`
}

const (
	defaultHistoryLimit = 100
	maxHistoryLimit     = 1000
)

type historyResult struct {
	WorkspaceRoot string          `json:"workspace_root"`
	InstanceID    string          `json:"instance_id"`
	Events        []sandbox.Event `json:"events" jsonschema:"The newest calls first, each with its tool, time, outcome and detail."`
	Count         int             `json:"count"`
}

func (s *Server) getHistory(ctx context.Context, a historyArgs) (*historyResult, error) {
	limit := defaultHistoryLimit
	if a.Limit != nil {
		if limit = *a.Limit; limit <= 0 || limit > maxHistoryLimit {
			return nil, newToolError(coded.InvalidArguments, fmt.Sprintf("limit must be 1 to %d", maxHistoryLimit),
				map[string]any{"field": "limit"})
		}
	}
	var ws spec.Options
	var err error
	sandboxName := ""
	if a.InstanceID != "" {
		var e state.IndexEntry
		if e, ws, err = s.instance(ctx, a.InstanceID); err != nil {
			return nil, err
		}
		sandboxName = e.Sandbox
	} else if ws, err = s.workspace(ctx, a.WorkspaceRoot, nil); err != nil {
		return nil, err
	}
	events, err := sandbox.WorkspaceHistory(ws.Root).Read(func(ev sandbox.Event) bool {
		return sandboxName == "" || ev.Sandbox == sandboxName
	}, limit)
	if err != nil {
		return nil, err
	}
	return &historyResult{ws.Root, a.InstanceID, nonNil(events), len(events)}, nil
}
