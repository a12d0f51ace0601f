package mcpserver

import (
	"context"
	"net/url"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/sandboxforge/sbf/internal/coded"
	"github.com/sandboxforge/sbf/internal/hostpath"
	"github.com/sandboxforge/sbf/internal/policy"
)

// rootsTimeout bounds how long a tool waits for the client's roots/list.
const rootsTimeout = 10 * time.Second

// clientRoots remembers each session's declared roots until the client
// says they changed.
type clientRoots struct {
	mu   sync.Mutex
	seen map[string][]string // session id → folders
}

func (c *clientRoots) forget(session string) {
	c.mu.Lock()
	delete(c.seen, session)
	c.mu.Unlock()
}

// watchRoots makes a roots/list_changed notification drop the session's
// remembered roots, so the next tool call asks again.
func (s *Server) watchRoots() {
	s.roots.seen = map[string][]string{}
	s.mcp.AddNotificationHandler(string(mcp.MethodNotificationRootsListChanged),
		func(ctx context.Context, _ mcp.JSONRPCNotification) {
			if cs := server.ClientSessionFromContext(ctx); cs != nil {
				s.roots.forget(cs.SessionID())
			}
		})
}

// allowed checks a workspace root (absolute, symlink-free) against the
// operator's policy and, when the client declared MCP roots, against
// those: a tool argument never reaches a folder neither allowed.
func (s *Server) allowed(ctx context.Context, root string) error {
	client, err := s.declaredRoots(ctx)
	if err != nil {
		return err
	}
	return s.cfg.Policy.Workspace(root, client)
}

// declaredRoots is nil when the client declared no roots capability, and
// the folders of its file:// roots otherwise (none at all allows nothing).
func (s *Server) declaredRoots(ctx context.Context) ([]string, error) {
	cs := server.ClientSessionFromContext(ctx)
	info, ok := cs.(server.SessionWithClientInfo)
	if cs == nil || !ok || info.GetClientCapabilities().Roots == nil {
		return nil, nil
	}
	id := cs.SessionID()
	s.roots.mu.Lock()
	folders, known := s.roots.seen[id]
	s.roots.mu.Unlock()
	if known {
		return folders, nil
	}
	ctx, cancel := context.WithTimeout(ctx, rootsTimeout)
	defer cancel()
	res, err := s.mcp.RequestRoots(ctx, mcp.ListRootsRequest{Request: mcp.Request{Method: string(mcp.MethodListRoots)}})
	if err != nil {
		return nil, coded.New(policy.WorkspaceNotAllowed, map[string]any{"reason": "roots/list failed"},
			"the client declared MCP roots but did not list them (%v); sbf serves only folders inside them", err)
	}
	folders = []string{}
	for _, r := range res.Roots {
		if f, ok := rootFolder(r.URI); ok {
			folders = append(folders, f)
		}
	}
	s.roots.mu.Lock()
	s.roots.seen[id] = folders
	s.roots.mu.Unlock()
	return folders, nil
}

// rootFolder turns a file:// root URI into a symlink-free folder.
func rootFolder(uri string) (string, bool) {
	u, err := url.Parse(uri)
	if err != nil || u.Scheme != "file" || (u.Host != "" && u.Host != "localhost") {
		return "", false
	}
	p := u.Path
	if runtime.GOOS == "windows" {
		p = strings.TrimPrefix(p, "/")
	}
	p = filepath.Clean(filepath.FromSlash(p))
	if !filepath.IsAbs(p) {
		return "", false
	}
	if real, err := hostpath.Real(p); err == nil {
		p = real
	}
	return p, true
}
