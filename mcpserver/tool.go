package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/sandboxforge/sbf/internal/coded"
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

// addTool registers a tool whose input schema is derived from A: fields
// without omitempty are required, unknown fields are rejected. Results are
// structured content plus the same JSON as text; failures are tool errors
// carrying the v1 envelope.
func addTool[A any](s *Server, name, description string, handle func(context.Context, A) (any, error)) {
	tool := mcp.NewTool(name, mcp.WithDescription(description), mcp.WithInputSchema[A]())
	schema := compileArgs(tool)
	s.mcp.AddTool(tool, func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if te := schema.check(req.Params.Arguments); te != nil {
			return errorResult(te), nil
		}
		var args A
		if err := req.BindArguments(&args); err != nil {
			return errorResult(newToolError(coded.InvalidArguments, clip(fmt.Sprintf("%s: %v", name, err)), map[string]any{"tool": name})), nil
		}
		out, err := handle(ctx, args)
		if err != nil {
			return errorResult(asToolError(err)), nil
		}
		return mcp.NewToolResultStructuredOnly(out), nil
	})
}

func errorResult(te *coded.Error) *mcp.CallToolResult {
	te = bounded(te)
	text, _ := json.Marshal(te)
	return &mcp.CallToolResult{
		Content:           []mcp.Content{mcp.TextContent{Type: mcp.ContentTypeText, Text: string(text)}},
		StructuredContent: te,
		IsError:           true,
	}
}

// iso renders times as v1 did: UTC, whole seconds, Z.
func iso(t time.Time) string { return t.UTC().Truncate(time.Second).Format(time.RFC3339) }

func isoPtr(t *time.Time) any {
	if t == nil || t.IsZero() {
		return nil
	}
	return iso(*t)
}
