package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/sandboxforge/sbf/internal/coded"
	"github.com/sandboxforge/sbf/reconcile"
	"github.com/sandboxforge/sbf/spec"
	"github.com/sandboxforge/sbf/state"
)

// workspace builds load options for a workspace root a client named:
// the engine's rule (reconcile.ServedWorkspace) says which workspace that
// folder is, once the operator's policy and the client's roots allow it;
// nothing is read or created in a folder this server does not serve.
func (s *Server) workspace(ctx context.Context, root string, extra json.RawMessage) (spec.Options, error) {
	if strings.TrimSpace(root) == "" {
		if root = s.cfg.DefaultRoot; root == "" {
			return spec.Options{}, s.workspaceRequired()
		}
	}
	client, err := s.declaredRoots(ctx)
	if err != nil {
		return spec.Options{}, err
	}
	abs, err := reconcile.ServedWorkspace(s.cfg.Policy, root, client)
	if err != nil {
		return spec.Options{}, err
	}
	ws, err := s.optionsAt(abs, spec.WorkspaceIDOf(abs), extra) // the rule resolved it: once per request
	if err == nil {
		usedWorkspace(ctx, ws) // callscope.go
	}
	return ws, err
}

// workspaceRequired refuses a call that names no workspace on a server
// with no default one (it serves several roots): guessing one would pick
// for the caller.
func (s *Server) workspaceRequired() error {
	roots := s.cfg.Policy.WorkspaceRoots
	return newToolError(coded.InvalidArguments, fmt.Sprintf("workspace_root is required: this server serves "+
		"several folders (%s); name the workspace as an absolute path in one of them", strings.Join(roots, ", ")),
		map[string]any{"field": "workspace_root", "served_workspace_roots": roots})
}

// recorded builds load options for a workspace root sbf recorded (an
// instance's, a forward's) when this server serves it, before and after
// links; ok is false when it does not, and the caller answers as if the
// thing asked for did not exist: a refusal names only what was given.
func (s *Server) recorded(ctx context.Context, root string) (ws spec.Options, ok bool, err error) {
	sc, err := s.scope(ctx) // handles.go
	if err != nil {
		return spec.Options{}, false, err
	}
	abs, id, ok := sc.hold(root)
	switch {
	case !ok:
		return spec.Options{}, false, nil
	case abs == "": // gone: options says so in its words
		noteWorkspace(ctx, root) // calltasks.go: the task is the caller's who may use root
		ws, err = s.options(root, nil)
		return ws, err == nil, err
	}
	if ws, err = s.optionsAt(abs, id, nil); err == nil {
		usedWorkspace(ctx, ws) // callscope.go
	}
	return ws, err == nil, err
}

// options builds load options for a workspace root: the server's v1
// settings and the call's own overrides form the request layer.
func (s *Server) options(root string, extra json.RawMessage) (spec.Options, error) {
	abs, id, err := spec.WorkspaceIdentity(root)
	if err != nil {
		return spec.Options{}, newToolError(coded.ConfigInvalid, clip(err.Error()),
			map[string]any{"workspace_root": clip(root), "errors": []string{clip(err.Error())}})
	}
	return s.optionsAt(abs, id, extra)
}

// optionsAt builds load options for a workspace whose root was resolved
// (abs, with its id), so no step of the request resolves it again.
func (s *Server) optionsAt(abs, id string, extra json.RawMessage) (spec.Options, error) {
	ws := spec.Options{Root: abs, ID: id, Host: s.cfg.Host, ConfigHome: s.cfg.ConfigHome,
		Now: s.cfg.Engine.Clock.Now()}
	layer := s.cfg.Settings.overrides()
	if len(layer) == 0 && len(extra) == 0 {
		return ws, nil
	}
	raw, err := mergeJSON(layer, extra)
	if err != nil {
		return ws, newToolError(coded.ConfigInvalid, err.Error(), map[string]any{"workspace_root": abs})
	}
	if ws.Request, err = spec.JSONOverrides(raw); err != nil {
		return ws, newToolError(coded.ConfigInvalid, err.Error(), map[string]any{"workspace_root": abs})
	}
	return ws, nil
}

// load resolves a workspace, turning problems into WORKSPACE_CONFIG_INVALID
// with v1's details.
func (s *Server) load(ws spec.Options) (*spec.Resolved, error) {
	r, err := s.cfg.Engine.Load(ws)
	if err != nil {
		te := asToolError(err)
		te.Details["workspace_root"] = ws.Root
		return nil, te
	}
	return r, nil
}

// lookup finds the workspace and sandbox behind an MCP instance id.
func (s *Server) lookup(id string) (state.IndexEntry, error) {
	if e, ok := s.index.Lookup(id); ok && id != "" {
		return e, nil
	}
	return state.IndexEntry{}, instanceNotFound(id)
}

// instanceNotFound is the answer for an id this server has no instance
// for, and for one of a workspace it does not serve: the same words, so
// neither where that instance lives nor that it exists is said.
func instanceNotFound(id string) error {
	return newToolError(coded.InstanceNotFound, fmt.Sprintf("Instance '%s' was not found among the instances "+
		"this server serves", clip(id)), map[string]any{"instance_id": clip(id)})
}

// instance resolves an MCP instance id to its entry and its workspace,
// which this server must serve.
func (s *Server) instance(ctx context.Context, id string) (state.IndexEntry, spec.Options, error) {
	e, err := s.lookup(id)
	if err != nil {
		return e, spec.Options{}, err
	}
	ws, ok, err := s.recorded(ctx, e.WorkspaceRoot)
	if err == nil && !ok {
		return state.IndexEntry{}, spec.Options{}, instanceNotFound(id)
	}
	if err == nil {
		note(ctx, instancesOf, id, e) // callscope.go
	}
	return e, ws, err
}

// instanceID is what MCP clients call an instance: the id create_instance
// made (the sandbox name), or the backend name for sandboxes a spec
// declares (sandbox names repeat across workspaces, backend names do not).
func instanceID(e state.IndexEntry) string {
	if strings.HasPrefix(e.Sandbox, "inst_") {
		return e.Sandbox
	}
	return e.Instance
}

// sshPort extracts the port of a driver's host:port address.
func sshPort(addr string) *int {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil
	}
	n, err := strconv.Atoi(port)
	if err != nil {
		return nil
	}
	return &n
}
