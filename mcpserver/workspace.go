package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/sandboxforge/sbf/internal/coded"
	"github.com/sandboxforge/sbf/internal/policy"
	"github.com/sandboxforge/sbf/spec"
	"github.com/sandboxforge/sbf/state"
)

// workspace builds load options for a workspace root a client named,
// once the operator's policy and the client's roots allow it: nothing is
// read or created in a folder this server does not serve.
func (s *Server) workspace(ctx context.Context, root string, extra json.RawMessage) (spec.Options, error) {
	if strings.TrimSpace(root) == "" {
		root = s.cfg.DefaultRoot
	}
	abs, _, err := spec.WorkspaceIdentity(root)
	if err != nil {
		return spec.Options{}, newToolError(coded.ConfigInvalid, clip(err.Error()),
			map[string]any{"workspace_root": clip(root), "errors": []string{clip(err.Error())}})
	}
	if err := s.allowed(ctx, abs); err != nil {
		return spec.Options{}, err
	}
	return s.options(abs, extra)
}

// options builds load options for a workspace root: the server's v1
// settings and the call's own overrides form the request layer.
func (s *Server) options(root string, extra json.RawMessage) (spec.Options, error) {
	abs, _, err := spec.WorkspaceIdentity(root)
	if err != nil {
		return spec.Options{}, newToolError(coded.ConfigInvalid, clip(err.Error()),
			map[string]any{"workspace_root": clip(root), "errors": []string{clip(err.Error())}})
	}
	ws := spec.Options{Root: abs, Host: s.cfg.Host, ConfigHome: s.cfg.ConfigHome, Now: s.cfg.Engine.Clock.Now()}
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
	return state.IndexEntry{}, newToolError(coded.InstanceNotFound, fmt.Sprintf("Instance '%s' was not found", id),
		map[string]any{"instance_id": id})
}

// instance resolves an MCP instance id to its entry and its workspace,
// which this server must serve.
func (s *Server) instance(ctx context.Context, id string) (state.IndexEntry, spec.Options, error) {
	e, err := s.lookup(id)
	if err != nil {
		return e, spec.Options{}, err
	}
	ws, err := s.workspace(ctx, e.WorkspaceRoot, nil)
	if te, ok := err.(*coded.Error); ok && te.Code == policy.WorkspaceNotAllowed {
		te.Details["instance_id"] = id
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
func sshPort(addr string) any {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil
	}
	n, err := strconv.Atoi(port)
	if err != nil {
		return nil
	}
	return n
}
