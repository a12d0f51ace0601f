package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/sandboxforge/sbf/internal/coded"
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
// Only a resource of this server is watched for a caller: the schema, or
// a resource of a workspace the caller may use (handles.go). A subscription
// to any other URI (a made-up one, another workspace's) is acknowledged as
// the protocol asks, the same for each, and watched by nothing: it costs a
// place among the session's bounded subscriptions, never a watcher, and
// tells nothing. Only the workspace resources ever change.

// Codes of a refused resources/subscribe (a JSON-RPC error's message
// starts with one).
const (
	codeSubscriptionLimit = "SUBSCRIPTION_LIMIT_EXCEEDED"
)

// Bounds of what clients make the server watch.
const (
	maxSubscriptionsPerSession = 32  // a session's subscriptions, and a listen stream's URIs
	maxWatchedResources        = 256 // distinct URIs watched, all clients together
	maxListenStreams           = 64  // listen streams open at once
)

type resourceSubs struct {
	mu        sync.Mutex
	bySession map[string]map[string]bool // session → subscribed URIs
	inert     map[string]map[string]bool // session → acknowledged URIs nothing watches
	streams   map[*listenStream]bool     // listen.go
	told      map[string]string          // URI → the summary its subscribers last heard of
}

func (s *Server) watchSubscriptions(hooks *server.Hooks) {
	s.subs.bySession, s.subs.inert, s.subs.told = map[string]map[string]bool{}, map[string]map[string]bool{},
		map[string]string{}
	hooks.AddOnRequestInitialization(s.admitSubscription)
	hooks.AddAfterSubscribe(func(ctx context.Context, _ any, req *mcp.SubscribeRequest, _ *mcp.EmptyResult) {
		cs := server.ClientSessionFromContext(ctx)
		if cs == nil || cs.SessionID() == "" { // no session to tell: nothing to watch for it
			return
		}
		uri, id := req.Params.URI, cs.SessionID()
		if sc, err := s.scope(ctx); err != nil || !s.mayWatch(sc, uri) {
			s.subs.mu.Lock()
			addTo(s.subs.inert, id, uri)
			s.subs.mu.Unlock()
			return
		}
		s.watchFrom([]string{uri}, func() {
			mine := s.subs.bySession[id]
			if mine == nil {
				mine = map[string]bool{}
				s.subs.bySession[id] = mine
			}
			if mine[uri] || len(mine) < maxSubscriptionsPerSession && s.roomLocked(uri) { // admitSubscription's bounds
				mine[uri] = true
			}
		})
	})
	hooks.AddAfterUnsubscribe(func(ctx context.Context, _ any, req *mcp.UnsubscribeRequest, _ *mcp.EmptyResult) {
		if cs := server.ClientSessionFromContext(ctx); cs != nil {
			s.subs.mu.Lock()
			delete(s.subs.bySession[cs.SessionID()], req.Params.URI)
			delete(s.subs.inert[cs.SessionID()], req.Params.URI)
			s.subs.mu.Unlock()
		}
	})
	hooks.AddOnUnregisterSession(func(_ context.Context, cs server.ClientSession) {
		s.subs.mu.Lock()
		delete(s.subs.bySession, cs.SessionID())
		delete(s.subs.inert, cs.SessionID())
		s.subs.mu.Unlock()
	})
	hooks.AddAfterCallTool(func(context.Context, any, *mcp.CallToolRequest, any) { s.resourcesChanged() })
}

// watchFrom sets what a new watcher of uris is told changes from: each
// resource as it is now, unless someone already watches it (then the
// summary is what they were last told, the resource as it was after the
// last tool call or pass). register records the watcher, at once with it
// (resourcesChanged forgets what nobody watches).
func (s *Server) watchFrom(uris []string, register func()) {
	now := make([]string, len(uris))
	for i, uri := range uris {
		now[i], _, _ = s.resourceSummary(uri)
	}
	s.subs.mu.Lock()
	defer s.subs.mu.Unlock()
	watched := s.watchedLocked()
	for i, uri := range uris {
		if _, ok := s.subs.told[uri]; !ok || !slices.Contains(watched, uri) {
			s.subs.told[uri] = now[i]
		}
	}
	register()
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
	for uri := range s.subs.told { // what nobody watches any more is forgotten
		if !slices.Contains(watched, uri) {
			delete(s.subs.told, uri)
		}
	}
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
			until := "none"
			if at := isoPtr(sb.ExpiresAt); at != nil {
				until = *at
			}
			lines = append(lines, fmt.Sprintf("%s %s %s %s", name, sb.Phase, sb.Instance, until))
		}
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n"), root, true
}

// admitSubscription refuses a resources/subscribe (before mcp-go
// acknowledges it) to a URI that is no resource the caller may use, with
// the words an unknown URI gets, or past the bounds.
func (s *Server) admitSubscription(ctx context.Context, _ any, message any) error {
	raw, _ := message.(json.RawMessage)
	if !bytes.Contains(raw, []byte(mcp.MethodResourcesSubscribe)) {
		return nil // the cheap test first: every request passes here
	}
	var req struct {
		Method string `json:"method"`
		Params struct {
			URI string `json:"uri"`
		} `json:"params"`
	}
	if json.Unmarshal(raw, &req) != nil || req.Method != string(mcp.MethodResourcesSubscribe) {
		return nil
	}
	uri := req.Params.URI
	sc, err := s.scope(ctx) // handles.go
	if err != nil {
		return resourceError(err)
	}
	watched := s.mayWatch(sc, uri)
	session := sessionOf(ctx)
	s.subs.mu.Lock()
	defer s.subs.mu.Unlock()
	mine, inert := s.subs.bySession[session], s.subs.inert[session]
	if !mine[uri] && !inert[uri] && len(mine)+len(inert) >= maxSubscriptionsPerSession {
		return resourceError(coded.New(codeSubscriptionLimit, map[string]any{"max": maxSubscriptionsPerSession},
			"this session holds %d subscriptions, the most allowed; unsubscribe from one first",
			maxSubscriptionsPerSession))
	}
	if watched && !s.roomLocked(uri) {
		return resourceError(coded.New(codeSubscriptionLimit, map[string]any{"max": maxWatchedResources},
			"this server watches the most resources it allows (%d); try again later", maxWatchedResources))
	}
	return nil
}

// mayWatch tells whether uri is a resource of this server the scope
// holds: the schema, or a resource of a workspace it may use.
func (s *Server) mayWatch(sc scope, uri string) bool {
	if uri == schemaURI {
		return true
	}
	rest, found := strings.CutPrefix(uri, workspacePrefix)
	id, kind, _ := strings.Cut(rest, "/")
	if !found || !slices.Contains(resourceKinds, kind) {
		return false
	}
	root, err := s.rootOf(id)
	return err == nil && sc.may(root)
}

// roomLocked tells whether uri is watched already or one more may be.
func (s *Server) roomLocked(uri string) bool {
	watched := s.watchedLocked()
	return slices.Contains(watched, uri) || len(watched) < maxWatchedResources
}

// addTo records uri in set's entry for session.
func addTo(set map[string]map[string]bool, session, uri string) {
	if set[session] == nil {
		set[session] = map[string]bool{}
	}
	set[session][uri] = true
}
