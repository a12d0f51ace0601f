package mcpserver

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/sandboxforge/sbf/internal/coded"
)

// Toolsets keep tools/list small (issue 42): every turn of an agent's
// conversation carries the list, so by default it holds what an agent
// needs first and every tool of SandboxForge v1. A toolset names a group
// of tools; each tool says its group where it is declared (toolDef). The
// operator lists toolsets (--toolsets, SBF_TOOLSETS); a client lists more
// for its session with enable_toolset. Toolsets shape the list, not what
// may be called: a tool left out of it still answers its name, so a
// client or script that calls it keeps working, under the same policy as
// every call.
type toolset string

const (
	setCore      toolset = "core"
	setWorkspace toolset = "workspace"
	setFiles     toolset = "files"
	setSessions  toolset = "sessions"
	setDocker    toolset = "docker"
	setSnapshots toolset = "snapshots"
	setObserve   toolset = "observe"
	// setV1 holds SandboxForge v1's tools (toolDef.v1), whatever their group.
	setV1 toolset = "v1"
	// setAlways is enable_toolset's: listed whatever is chosen.
	setAlways toolset = ""
)

// Names an operator may give besides the toolsets.
const (
	ToolsetsAll     = "all"     // every toolset
	ToolsetsDefault = "default" // core and v1
)

// toolsetGroups are the toolsets in the order enable_toolset lists them,
// each with what it holds.
var toolsetGroups = []struct {
	name  toolset
	about string
}{
	{setCore, "make, list, extend and destroy sandboxes; run commands"},
	{setWorkspace, "the workspace's desired state: validate, plan, apply, prepare"},
	{setFiles, "host copies and syncs; guest files: read, write, list, move, remove"},
	{setSessions, "background tasks and interactive exec sessions"},
	{setDocker, "Docker and compose in a sandbox"},
	{setSnapshots, "snapshots, their export and import, and clones"},
	{setObserve, "exposed ports, resource use, history, health, egress log"},
	{setV1, "every tool of SandboxForge v1"},
}

var defaultToolsets = []toolset{setCore, setV1}

// ParseToolsets reads the operator's choice: toolset names separated by
// commas, "all", "default" (core and v1); empty is the default.
func ParseToolsets(v string) ([]string, error) {
	var out []string
	for _, name := range strings.Split(v, ",") {
		name = strings.ToLower(strings.TrimSpace(name))
		if name == "" {
			continue
		}
		if _, err := expandToolset(name); err != nil {
			return nil, err
		}
		out = append(out, name)
	}
	return out, nil
}

// expandToolset is the toolsets one name stands for.
func expandToolset(name string) ([]toolset, error) {
	switch name {
	case ToolsetsAll:
		var all []toolset
		for _, g := range toolsetGroups {
			all = append(all, g.name)
		}
		return all, nil
	case ToolsetsDefault:
		return defaultToolsets, nil
	}
	for _, g := range toolsetGroups {
		if string(g.name) == name {
			return []toolset{g.name}, nil
		}
	}
	return nil, fmt.Errorf("unknown toolset %q: want %s", coded.Clip(name), strings.Join(toolsetNames(), ", "))
}

// toolsetNames are the names enable_toolset and the flag take.
func toolsetNames() []string {
	return append([]string{ToolsetsAll, ToolsetsDefault}, ToolsetNames()...)
}

// ToolsetNames are the toolsets, in the order enable_toolset lists them.
func ToolsetNames() []string {
	var names []string
	for _, g := range toolsetGroups {
		names = append(names, string(g.name))
	}
	return names
}

// toolListing is who sees which tools: the operator's toolsets, those a
// session switched on, and each registered tool's declaration.
type toolListing struct {
	mu       sync.Mutex
	operator map[toolset]bool
	// sessions are the toolsets registered sessions switched on, forgotten
	// when the session ends: only a registered session's end is heard, so
	// only those keep a list (a 2026-07-28 client over HTTP has a session
	// of its own for each request, never registered).
	sessions   map[string]map[toolset]bool
	registered map[string]bool
	defs       map[string]toolDef
}

// listed says whether a tool is in the list of toolsets on.
func (def toolDef) listed(on map[toolset]bool) bool {
	return def.set == setAlways || on[def.set] || def.v1 && on[setV1]
}

// watchToolsets sets the operator's toolsets up and filters each
// tools/list answer to the toolsets on for its session. The filter is an
// after-list hook, not mcp-go's tool filter, which also refuses calls.
// The tools' declarations (defs) are written as they are registered,
// before the server serves, and only read after.
func (s *Server) watchToolsets(hooks *server.Hooks) {
	l := &s.listing
	l.operator, l.sessions, l.defs = map[toolset]bool{}, map[string]map[toolset]bool{}, map[string]toolDef{}
	l.registered = map[string]bool{}
	chosen := s.cfg.Settings.Toolsets
	if len(chosen) == 0 {
		chosen = []string{ToolsetsDefault}
	}
	for _, name := range chosen {
		sets, err := expandToolset(name)
		if err != nil {
			panic(fmt.Sprintf("toolsets: %v (ParseToolsets reads them)", err))
		}
		for _, set := range sets {
			l.operator[set] = true
		}
	}
	hooks.AddAfterListTools(func(ctx context.Context, _ any, _ *mcp.ListToolsRequest, res *mcp.ListToolsResult) {
		on := s.toolsetsOn(ctx)
		res.Tools = slices.DeleteFunc(res.Tools, func(t mcp.Tool) bool { return !l.defs[t.Name].listed(on) })
	})
	hooks.AddOnRegisterSession(func(_ context.Context, cs server.ClientSession) {
		l.mu.Lock()
		l.registered[cs.SessionID()] = true
		l.mu.Unlock()
	})
	hooks.AddOnUnregisterSession(func(_ context.Context, cs server.ClientSession) {
		l.mu.Lock()
		delete(l.sessions, cs.SessionID())
		delete(l.registered, cs.SessionID())
		l.mu.Unlock()
	})
}

// toolsetsOn are the toolsets listed for the caller's session.
func (s *Server) toolsetsOn(ctx context.Context) map[toolset]bool {
	l := &s.listing
	l.mu.Lock()
	defer l.mu.Unlock()
	on := map[toolset]bool{}
	for set := range l.operator {
		on[set] = true
	}
	if cs := server.ClientSessionFromContext(ctx); cs != nil {
		for set := range l.sessions[cs.SessionID()] {
			on[set] = true
		}
	}
	return on
}

type enableToolsetArgs struct {
	Toolset string `json:"toolset,omitempty" jsonschema:"The toolset to list from now on in this session (all: every one); without it, the toolsets are only listed."`
}

type toolsetsResult struct {
	Toolsets []toolsetRow `json:"toolsets" jsonschema:"Each toolset's name, about, tools and whether they are listed."`
}

type toolsetRow struct {
	Name   toolset  `json:"name"`
	About  string   `json:"about"`
	Tools  []string `json:"tools"`
	Listed bool     `json:"listed"`
}

func (s *Server) enableToolset(ctx context.Context, a enableToolsetArgs) (*toolsetsResult, error) {
	if a.Toolset != "" {
		sets, err := expandToolset(strings.ToLower(strings.TrimSpace(a.Toolset)))
		if err != nil {
			return nil, newToolError(coded.InvalidArguments, err.Error(),
				map[string]any{"field": "toolset", "allowed": toolsetNames()})
		}
		cs := server.ClientSessionFromContext(ctx)
		s.listing.mu.Lock()
		if cs == nil || !s.listing.registered[cs.SessionID()] {
			s.listing.mu.Unlock()
			return nil, newToolError(coded.InvalidArguments, "this request has no session to keep a tool list "+
				"in (a client of 2026-07-28 over HTTP): the operator's --toolsets decide what tools/list holds, "+
				"and every tool answers its name even when it is not listed", map[string]any{"field": "toolset"})
		}
		on := s.listing.sessions[cs.SessionID()]
		if on == nil {
			on = map[toolset]bool{}
			s.listing.sessions[cs.SessionID()] = on
		}
		for _, set := range sets {
			on[set] = true
		}
		s.listing.mu.Unlock()
		// The list changed for this session only; a client that missed the
		// notification still finds the tools in its next tools/list.
		_ = s.mcp.SendNotificationToClient(ctx, mcp.MethodNotificationToolsListChanged, nil)
	}
	on := s.toolsetsOn(ctx)
	var rows []toolsetRow
	for _, g := range toolsetGroups {
		var tools []string
		for name, def := range s.listing.defs {
			if def.set == g.name || g.name == setV1 && def.v1 {
				tools = append(tools, name)
			}
		}
		slices.Sort(tools)
		listed := !slices.ContainsFunc(tools, func(name string) bool { return !s.listing.defs[name].listed(on) })
		rows = append(rows, toolsetRow{g.name, g.about, tools, listed})
	}
	return &toolsetsResult{rows}, nil
}
