package mcpserver

import (
	"context"
	"slices"

	"github.com/mark3labs/mcp-go/server"

	"github.com/sandboxforge/sbf/internal/policy"
	"github.com/sandboxforge/sbf/spec"
)

// Handles (issue 39): an exec session, a background task, an MCP task, a
// resource subscription and a listen stream are ids a client holds from
// call to call. Each belongs to the workspace it was made in, and every
// lookup checks first that the caller may use that workspace — the
// operator's policy and the client's MCP roots, before and after links,
// the check a tool's workspace_root or instance_id gets (workspace.go) —
// and answers a handle of any other workspace as one that never existed,
// in the same words: no oracle. A client whose roots/list failed may use
// none.

// scope is what a caller may use: the operator's policy, narrowed by the
// roots the client declared (nil: it declared none).
type scope struct {
	policy policy.Policy
	client []string
}

// scope is the caller's; it asks the client for its roots when they are
// not known yet, and fails when the client does not list them.
func (s *Server) scope(ctx context.Context) (scope, error) {
	client, err := s.declaredRoots(ctx)
	return scope{policy: s.cfg.Policy, client: client}, err
}

// knownScope is a session's scope without asking it anything (the loop
// and notifications cannot wait for a client): ok is false for a client
// that declared roots and has not listed them yet.
func (s *Server) knownScope(cs server.ClientSession) (sc scope, ok bool) {
	sc.policy = s.cfg.Policy
	if info, is := cs.(server.SessionWithClientInfo); is && info.GetClientCapabilities().Roots != nil {
		s.roots.mu.Lock()
		defer s.roots.mu.Unlock()
		sc.client, ok = s.roots.seen[cs.SessionID()]
		return sc, ok
	}
	return sc, true
}

// may tells whether the scope holds the workspace at root (as sbf
// recorded it), both as recorded and where its links lead now.
func (sc scope) may(root string) bool {
	_, _, ok := sc.hold(root)
	return ok
}

// hold is may, with the workspace's root as its links lead now and its id
// ("" when it cannot be resolved: it is gone).
func (sc scope) hold(root string) (abs, id string, ok bool) {
	if root == "" || sc.policy.Workspace(root, sc.client) != nil {
		return "", "", false
	}
	abs, id, err := spec.WorkspaceIdentity(root)
	if err != nil {
		return "", "", true
	}
	return abs, id, abs == root || sc.policy.Workspace(abs, sc.client) == nil
}

// mayAll tells whether the scope holds every one of roots.
func (sc scope) mayAll(roots []string) bool {
	return !slices.ContainsFunc(roots, func(r string) bool { return !sc.may(r) })
}
