package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/sandboxforge/sbf/reconcile"
)

// toolError is the v1 failure envelope: {error_code, message, details}.
type toolError struct {
	Code    string         `json:"error_code"`
	Message string         `json:"message"`
	Details map[string]any `json:"details"`
}

func (e *toolError) Error() string { return e.Message }

func newToolError(code, msg string, details map[string]any) *toolError {
	if details == nil {
		details = map[string]any{}
	}
	return &toolError{Code: code, Message: msg, Details: details}
}

// asToolError classifies any engine error into v1's codes.
func asToolError(err error) *toolError {
	if te, ok := err.(*toolError); ok {
		return te
	}
	code, details := reconcile.CodeOf(err)
	if code == "ERROR" {
		code = reconcile.CodeBackendCommand
	}
	return newToolError(code, err.Error(), details)
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
			return errorResult(newToolError("INVALID_ARGUMENTS", clip(fmt.Sprintf("%s: %v", name, err)), map[string]any{"tool": name})), nil
		}
		out, err := handle(ctx, args)
		if err != nil {
			return errorResult(asToolError(err)), nil
		}
		return mcp.NewToolResultStructuredOnly(out), nil
	})
}

func errorResult(te *toolError) *mcp.CallToolResult {
	te = te.bounded()
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
