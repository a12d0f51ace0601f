package mcpserver

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/sandboxforge/sbf/spec"
	"github.com/sandboxforge/sbf/state"
)

// Resource subscriptions (issue 31): a client that subscribed to a
// workspace's sandboxes (or snapshots) resource hears
// notifications/resources/updated whenever a sandbox's phase or lease end
// (or the snapshot list) changes, whether a tool or the reconcile loop
// changed it, instead of polling list_instances. mcp-go acknowledges
// resources/subscribe itself and tracks nothing, so the server keeps who
// subscribed to what (its hooks; a 2026-07-28 client's subscriptions/listen
// streams in listen.go) and compares each watched resource's state-file
// summary after every tool call and loop pass.
//
// Any URI may be subscribed to (the protocol's acknowledgement says no
// more); only the workspace resources ever change.

type resourceSubs struct {
	mu        sync.Mutex
	bySession map[string]map[string]bool // session → subscribed URIs
	streams   map[*listenStream]bool     // listen.go
	told      map[string]string          // URI → the summary its subscribers last heard of
}

func (s *Server) watchSubscriptions(hooks *server.Hooks) {
	s.subs.bySession, s.subs.told = map[string]map[string]bool{}, map[string]string{}
	hooks.AddAfterSubscribe(func(ctx context.Context, _ any, req *mcp.SubscribeRequest, _ *mcp.EmptyResult) {
		cs := server.ClientSessionFromContext(ctx)
		if cs == nil {
			return
		}
		uri := req.Params.URI
		s.watchFrom(uri)
		s.subs.mu.Lock()
		defer s.subs.mu.Unlock()
		if s.subs.bySession[cs.SessionID()] == nil {
			s.subs.bySession[cs.SessionID()] = map[string]bool{}
		}
		s.subs.bySession[cs.SessionID()][uri] = true
	})
	hooks.AddAfterUnsubscribe(func(ctx context.Context, _ any, req *mcp.UnsubscribeRequest, _ *mcp.EmptyResult) {
		if cs := server.ClientSessionFromContext(ctx); cs != nil {
			s.subs.mu.Lock()
			delete(s.subs.bySession[cs.SessionID()], req.Params.URI)
			s.subs.mu.Unlock()
		}
	})
	hooks.AddOnUnregisterSession(func(_ context.Context, cs server.ClientSession) {
		s.subs.mu.Lock()
		delete(s.subs.bySession, cs.SessionID())
		s.subs.mu.Unlock()
	})
	hooks.AddAfterCallTool(func(context.Context, any, *mcp.CallToolRequest, any) { s.resourcesChanged() })
}

// watchFrom sets what a new watcher of uri is told changes from: the
// resource as it is now, unless someone already watches it (then the
// summary is what they were last told, the resource as it was after the
// last tool call or pass).
func (s *Server) watchFrom(uri string) {
	now, _, _ := s.resourceSummary(uri)
	s.subs.mu.Lock()
	defer s.subs.mu.Unlock()
	if _, ok := s.subs.told[uri]; !ok || !slices.Contains(s.watchedLocked(), uri) {
		s.subs.told[uri] = now
	}
}

// watchedLocked is every URI someone subscribed to or listens to.
func (s *Server) watchedLocked() []string {
	set := map[string]bool{}
	for _, uris := range s.subs.bySession {
		for uri := range uris {
			set[uri] = true
		}
	}
	for st := range s.subs.streams {
		if st.ctx.Err() == nil { // closed, its AfterFunc not yet run
			for _, uri := range st.uris {
				set[uri] = true
			}
		}
	}
	return slices.Sorted(maps.Keys(set))
}

// resourcesChanged tells each subscriber or listener of a watched
// resource whose summary changed since it was last told.
func (s *Server) resourcesChanged() {
	s.subs.mu.Lock()
	watched := s.watchedLocked()
	s.subs.mu.Unlock()
	for _, uri := range watched {
		now, root, ok := s.resourceSummary(uri)
		if !ok {
			continue
		}
		s.subs.mu.Lock()
		changed := s.subs.told[uri] != now
		s.subs.told[uri] = now
		s.subs.mu.Unlock()
		if changed {
			s.tellSubscribers(uri, root)
			s.tellStreams(uri, root) // listen.go
		}
	}
}

// tellSubscribers tells the sessions that sent resources/subscribe.
func (s *Server) tellSubscribers(uri, root string) {
	s.subs.mu.Lock()
	var ids []string
	for id, uris := range s.subs.bySession {
		if uris[uri] {
			ids = append(ids, id)
		}
	}
	s.subs.mu.Unlock()
	s.logs.mu.Lock()
	sessions := maps.Clone(s.logs.sessions)
	s.logs.mu.Unlock()
	for _, id := range slices.Sorted(slices.Values(ids)) {
		if cs, ok := sessions[id]; ok && s.mayHear(cs, root) { // logging.go: as the loop's log lines
			_ = s.mcp.SendNotificationToSpecificClient(id, string(mcp.MethodNotificationResourceUpdated),
				map[string]any{"uri": uri})
		}
	}
}

// resourceSummary is what a workspace resource's updates are about, as
// text: each sandbox's phase, instance and lease end, or each snapshot.
// ok is false for a URI that is no workspace resource of this server;
// root is the workspace's.
func (s *Server) resourceSummary(uri string) (summary, root string, ok bool) {
	rest, found := strings.CutPrefix(uri, workspacePrefix)
	id, kind, _ := strings.Cut(rest, "/")
	if !found || kind != "sandboxes" && kind != "snapshots" {
		return "", "", false
	}
	root, err := s.rootOf(id)
	if err != nil {
		return "", "", false
	}
	rec, err := state.Read(filepath.Join(root, spec.Dir), root, id)
	if err != nil {
		return "", "", false
	}
	var lines []string
	if kind == "snapshots" {
		for _, sn := range rec.Snapshots {
			lines = append(lines, sn.Sandbox+"/"+sn.Name+" "+sn.Instance)
		}
	} else {
		for _, name := range slices.Sorted(maps.Keys(rec.Sandboxes)) {
			sb := rec.Sandboxes[name]
			lines = append(lines, fmt.Sprintf("%s %s %s %v", name, sb.Phase, sb.Instance, isoPtr(sb.ExpiresAt)))
		}
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n"), root, true
}
