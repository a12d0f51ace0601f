package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/sandboxforge/sbf/internal/coded"
	"github.com/sandboxforge/sbf/reconcile"
)

// newToolError builds the envelope message first, as tools read best.
func newToolError(code, msg string, details map[string]any) *coded.Error {
	return coded.New(code, details, "%s", msg)
}

// asToolError classifies any engine error into v1's codes; what nothing
// classified failed in the backend, as v1 reported it.
func asToolError(err error) *coded.Error {
	return coded.Of(err, coded.BackendCommand)
}

// toolDef declares a tool where its handler is registered: its name, the
// title a client shows, what it does and returns (said once, for an LLM
// that reads it before its first call), the toolset it is listed in and
// whether it is one of SandboxForge v1's (toolsets.go).
type toolDef struct {
	name, title, about string
	set                toolset
	v1                 bool
	hints              hints // hints.go: its MCP annotations
	task               bool  // it may run for minutes: callable as an MCP task (calltasks.go)
	// unrecorded leaves its calls out of the history (history.go): the
	// engine records the lifecycle tools itself (audited), refusals
	// included, and reading the history is no action on a sandbox.
	unrecorded bool
	output     map[string]any // the output schema, from the handler's result type
	// args are the enums and bounds its input schema states beyond its
	// argument type's (toolschema.go); the operator's ceilings add theirs.
	args map[string]argRule
}

// addTool registers a tool whose input schema is derived from A: fields
// without omitempty are required, a field's `default` tag is its schema's
// default. Arguments the tool does not take are ignored, as v1 did, and
// named in the answer's warnings, so the schema allows additional
// properties (a validating client would otherwise refuse a call the
// server accepts); a known argument of the wrong type is
// INVALID_ARGUMENTS. Its annotations are def's hints. Results
// are structured content plus the same JSON as text, fitted to the
// response budget (render.go); failures are tool errors carrying the v1
// envelope. A call waits for one of the server's call slots (inflight.go).
func addTool[A, R any](s *Server, def toolDef, handle func(context.Context, A) (R, error)) {
	name := def.name
	def.output = resultSchema(reflect.TypeFor[R]()) // outputs.go
	s.listing.defs[name] = def                      // toolsets.go: which sessions list it
	tool := mcp.NewTool(
		name,
		mcp.WithDescription(def.about),
		mcp.WithInputSchema[A](),
		mcp.WithToolAnnotation(annotations(def.hints)),
	)
	// The title where the protocol (2025-06-18 on) and the SDKs' display
	// helpers read it first; not again in the annotations (2025-03-26's
	// place), which every turn of a conversation would carry twice.
	tool.Title = def.title
	if def.task { // calltasks.go
		tool.Execution = &mcp.ToolExecution{TaskSupport: mcp.TaskSupportOptional}
	}
	tool.RawInputSchema = openSchema[A](name, tool.RawInputSchema)
	schema := compileArgs(tool)
	s.describeTool(&tool, def.output, def.args) // toolschema.go: output schema, enums and bounds (advertised only)
	s.mcp.AddTool(tool, func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		raw, warnings := schema.known(req.Params.Arguments)
		if te := schema.check(raw); te != nil {
			return errorResult(te, warnings...), nil
		}
		req.Params.Arguments = raw
		var args A
		if err := req.BindArguments(&args); err != nil {
			return errorResult(
				newToolError(coded.InvalidArguments, clip(fmt.Sprintf("%s: %v", name, err)), map[string]any{"tool": name}),
				warnings...), nil
		}
		start := s.cfg.Engine.Clock.Now()
		ctx = withCallScope(ctx)          // callscope.go
		ctx, forget := s.asTask(ctx, req) // calltasks.go
		defer forget()
		ctx = reconcile.WithEvents(ctx, s.logStep)  // steplog.go
		ctx, stop := s.withProgress(ctx, name, req) // progress.go
		defer stop()
		release, err := s.calls.acquire(ctx, name) // inflight.go: held until the result is rendered
		if err != nil {
			return errorResult(asToolError(err), warnings...), nil
		}
		defer release()
		out, err := handle(ctx, args)
		s.afterCall(ctx, name, raw, out, err, start) // agenttools.go: metrics, history
		if err != nil {
			return errorResult(asToolError(err), warnings...), nil
		}
		return structuredResult(withWarnings(any(out), warnings)), nil
	})
}

// withWarnings adds warnings to a result's own "warnings" list (every
// tool answers an object).
func withWarnings(out any, warnings []string) any {
	var m map[string]any
	if len(warnings) == 0 {
		return out
	}
	if typed, ok := resultMap(out); ok {
		m = typed
	} else if raw, err := json.Marshal(out); err != nil || json.Unmarshal(raw, &m) != nil || m == nil {
		return out
	}
	prev, _ := m["warnings"].([]any) // a result's own, or none (null)
	for _, w := range warnings {
		prev = append(prev, w)
	}
	m["warnings"] = prev
	return m
}

// errorResult renders the envelope, bounded, with the next calls an agent
// can make; warnings (ignored arguments) go into its details.
func errorResult(te *coded.Error, warnings ...string) *mcp.CallToolResult {
	te = bounded(withNextSteps(te)) // v1errors.go
	if len(warnings) > 0 {
		if te.Details == nil {
			te.Details = map[string]any{}
		}
		te.Details["warnings"] = warnings
	}
	text, _ := json.Marshal(te)
	return &mcp.CallToolResult{
		Content:           []mcp.Content{mcp.TextContent{Type: mcp.ContentTypeText, Text: string(text)}},
		StructuredContent: te,
		IsError:           true,
	}
}

// iso renders times as v1 did: UTC, whole seconds, Z.
func iso(t time.Time) string { return t.UTC().Truncate(time.Second).Format(time.RFC3339) }

// isoPtr is a time as v1 rendered it, null when there is none.
func isoPtr(t *time.Time) *string {
	if t == nil || t.IsZero() {
		return nil
	}
	s := iso(*t)
	return &s
}
