package mcpserver

import (
	"context"
	"path/filepath"
	"slices"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/sandboxforge/sbf/spec"
	"github.com/sandboxforge/sbf/state"
)

// completer answers completion/complete for the prompts' arguments and
// the resource templates' {id}: instance ids, snapshot names, workspace
// roots and ids, each only from workspaces the caller may use (the same
// check a tool makes), so completion never names what a tool would
// refuse to touch. Anything else completes to nothing, never an error: a
// client asks as the user types.
type completer struct{ s *Server }

// maxCompletions is the protocol's cap on values per answer.
const maxCompletions = 100

func (c completer) CompletePromptArgument(ctx context.Context, _ string, arg mcp.CompleteArgument,
	cc mcp.CompleteContext) (*mcp.Completion, error) {
	switch arg.Name {
	case "instance_id":
		return matching(c.instanceIDs(ctx), arg.Value), nil
	case "snapshot":
		return matching(c.snapshots(ctx, cc.Arguments["instance_id"]), arg.Value), nil
	case "workspace_root":
		return matching(c.roots(ctx), arg.Value), nil
	}
	return matching(nil, arg.Value), nil
}

func (c completer) CompleteResourceArgument(ctx context.Context, uri string, arg mcp.CompleteArgument,
	_ mcp.CompleteContext) (*mcp.Completion, error) {
	if !strings.HasPrefix(uri, workspacePrefix) || arg.Name != "id" {
		return matching(nil, arg.Value), nil
	}
	var ids []string
	for _, root := range c.roots(ctx) {
		if _, id, err := spec.WorkspaceIdentity(root); err == nil {
			ids = append(ids, id)
		}
	}
	return matching(ids, arg.Value), nil
}

// matching keeps the values that start with what was typed, sorted,
// at most maxCompletions (Total and HasMore say how many more).
func matching(values []string, prefix string) *mcp.Completion {
	out := []string{}
	for _, v := range values {
		if strings.HasPrefix(v, prefix) && !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	slices.Sort(out)
	total := len(out)
	if total > maxCompletions {
		out = out[:maxCompletions]
	}
	return &mcp.Completion{Values: out, Total: total, HasMore: total > len(out)}
}

// usable lists the host index's entries whose workspace the caller may
// use.
func (c completer) usable(ctx context.Context) []state.IndexEntry {
	entries, err := c.s.index.All()
	if err != nil {
		return nil
	}
	var out []state.IndexEntry
	for _, e := range entries {
		if c.s.allowed(ctx, e.WorkspaceRoot) == nil {
			out = append(out, e)
		}
	}
	return out
}

func (c completer) instanceIDs(ctx context.Context) []string {
	var ids []string
	for _, e := range c.usable(ctx) {
		ids = append(ids, instanceID(e))
	}
	return ids
}

// snapshots are the names of an instance's snapshots as its workspace's
// state file records them (no backend is asked).
func (c completer) snapshots(ctx context.Context, id string) []string {
	if id == "" {
		return nil
	}
	e, err := c.s.lookup(id)
	if err != nil || c.s.allowed(ctx, e.WorkspaceRoot) != nil {
		return nil
	}
	_, wid, err := spec.WorkspaceIdentity(e.WorkspaceRoot)
	if err != nil {
		return nil
	}
	rec, err := state.Read(filepath.Join(e.WorkspaceRoot, spec.Dir), e.WorkspaceRoot, wid)
	if err != nil {
		return nil
	}
	var names []string
	for _, sn := range rec.Snapshots {
		if sn.Sandbox == e.Sandbox {
			names = append(names, sn.Name)
		}
	}
	return names
}

// roots are the workspaces this server has served or holds instances
// of, that the caller may use.
func (c completer) roots(ctx context.Context) []string {
	candidates := []string{c.s.cfg.DefaultRoot}
	c.s.mu.Lock()
	for r := range c.s.touched {
		candidates = append(candidates, r)
	}
	c.s.mu.Unlock()
	for _, e := range c.usable(ctx) {
		candidates = append(candidates, e.WorkspaceRoot)
	}
	var out []string
	for _, r := range candidates {
		if r != "" && c.s.allowed(ctx, r) == nil {
			out = append(out, r)
		}
	}
	return out
}
