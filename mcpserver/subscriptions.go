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
// subscribed to what (its hooks) and compares each watched resource's
// state-file summary after every tool call and loop pass.
//
// Any URI may be subscribed to (the protocol's acknowledgement says no
// more); only the workspace resources ever change.

type resourceSubs struct {
	mu        sync.Mutex
	bySession map[string]map[string]bool // session → subscribed URIs
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
		now, _, _ := s.resourceSummary(uri) // the baseline: what changes after the subscription is news
		s.subs.mu.Lock()
		defer s.subs.mu.Unlock()
		if s.subs.bySession[cs.SessionID()] == nil {
			s.subs.bySession[cs.SessionID()] = map[string]bool{}
		}
		s.subs.bySession[cs.SessionID()][uri] = true
		if _, ok := s.subs.told[uri]; !ok {
			s.subs.told[uri] = now
		}
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

// resourcesChanged tells each subscriber of a watched resource whose
// summary changed since it was last told.
func (s *Server) resourcesChanged() {
	s.subs.mu.Lock()
	watched := map[string][]string{} // URI → sessions
	for id, uris := range s.subs.bySession {
		for uri := range uris {
			watched[uri] = append(watched[uri], id)
		}
	}
	s.subs.mu.Unlock()
	for _, uri := range slices.Sorted(maps.Keys(watched)) {
		now, root, ok := s.resourceSummary(uri)
		if !ok {
			continue
		}
		s.subs.mu.Lock()
		changed := s.subs.told[uri] != now
		s.subs.told[uri] = now
		s.subs.mu.Unlock()
		if !changed {
			continue
		}
		s.logs.mu.Lock()
		sessions := maps.Clone(s.logs.sessions)
		s.logs.mu.Unlock()
		for _, id := range watched[uri] {
			if cs, ok := sessions[id]; ok && s.mayHear(cs, root) { // logging.go: as the loop's log lines
				_ = s.mcp.SendNotificationToSpecificClient(id, string(mcp.MethodNotificationResourceUpdated),
					map[string]any{"uri": uri})
			}
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
