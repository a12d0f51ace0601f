package mcpserver

import (
	"context"
	"slices"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// Resource updates for clients of protocol 2026-07-28 (SEP-2575), which
// removed resources/subscribe (mcp-go answers it -32601): such a client
// subscribes by a subscriptions/listen request naming the URIs in its
// filter's resourceSubscriptions; the response stream stays open until the
// client cancels it, and every notification on it carries the listen
// request's id in _meta (io.modelcontextprotocol/subscriptionId).
//
// mcp-go acknowledges the listen and holds the stream open, but sends
// notifications/resources/updated to nobody: it records the URIs only on
// sessions that keep subscriptions, and none of its transports' sessions
// do; and over Streamable HTTP the stream's session is one of its own that
// mcp-go never registers, so no session id reaches it. sbf therefore keeps
// the open streams (their sessions come with the listen request) and
// writes each update to the stream's session: a session's notification
// channel is where mcp-go's transports read a stream's messages from.
//
// Left to mcp-go: the acknowledgement is sent after the hook that records
// a stream, so a change finished in between (microseconds) would be told
// before it; mcp-go's own list_changed broadcasts have the same window.

// listenStream is a subscriptions/listen request in flight.
type listenStream struct {
	ctx  context.Context // the listen request's: done when the client closes the stream
	cs   server.ClientSession
	id   any // the listen request's JSON-RPC id, which tags each notification on the stream
	uris []string
}

func (s *Server) watchListens(hooks *server.Hooks) {
	s.subs.streams = map[*listenStream]bool{}
	hooks.AddBeforeSubscriptionsListen(func(ctx context.Context, id any, req *mcp.SubscriptionsListenRequest) {
		cs := server.ClientSessionFromContext(ctx)
		var uris []string
		if asked := req.Params.Notifications.ResourceSubscriptions; len(asked) > 0 {
			uris = s.grant(ctx, asked)
			req.Params.Notifications.ResourceSubscriptions = uris // the acknowledgement names what was granted
		}
		if cs == nil || id == nil || len(uris) == 0 {
			return
		}
		st := &listenStream{ctx: ctx, cs: cs, id: id, uris: uris}
		s.watchFrom(uris, func() { s.subs.streams[st] = true })
		context.AfterFunc(ctx, func() {
			s.subs.mu.Lock()
			delete(s.subs.streams, st)
			s.subs.mu.Unlock()
		})
	})
}

// grant is what a listen stream may watch of the URIs it asked for: the
// resources the caller may use (subscriptions.go), within the bounds. A
// URI left out is left out of the acknowledgement, whether it does not
// exist or is not the caller's; past the bound of streams, nothing is
// granted.
func (s *Server) grant(ctx context.Context, asked []string) []string {
	sc, err := s.scope(ctx) // handles.go
	if err != nil {
		return []string{}
	}
	uris := []string{}
	for _, uri := range slices.Compact(slices.Sorted(slices.Values(asked))) {
		if len(uris) < maxSubscriptionsPerSession && s.mayWatch(sc, uri) {
			uris = append(uris, uri)
		}
	}
	s.subs.mu.Lock()
	defer s.subs.mu.Unlock()
	if len(s.subs.streams) >= maxListenStreams {
		return []string{}
	}
	watched := s.watchedLocked()
	return slices.DeleteFunc(uris, func(uri string) bool {
		if slices.Contains(watched, uri) {
			return false
		}
		if len(watched) >= maxWatchedResources {
			return true
		}
		watched = append(watched, uri)
		return false
	})
}

// tellStreams sends notifications/resources/updated on each open listen
// stream that named uri and whose client may hear of the workspace.
func (s *Server) tellStreams(uri, root string) {
	s.subs.mu.Lock()
	var open []*listenStream
	for st := range s.subs.streams {
		if st.listensTo(uri) {
			open = append(open, st)
		}
	}
	s.subs.mu.Unlock()
	for _, st := range open {
		if s.mayHear(st.cs, root) { // logging.go: as the loop's log lines
			st.send(uri)
		}
	}
}

// listensTo says whether the stream is open and was granted uri: over
// Streamable HTTP mcp-go records what it acknowledged on the session.
func (st *listenStream) listensTo(uri string) bool {
	if st.ctx.Err() != nil || !slices.Contains(st.uris, uri) {
		return false
	}
	if f, ok := st.cs.(server.SessionWithSubscriptionFilter); ok {
		granted, active := f.SubscriptionFilter()
		return active && slices.Contains(granted.ResourceSubscriptions, uri)
	}
	return true
}

// send tags the update with the stream's id (mcp-go tags what it forwards
// on Streamable HTTP, not on stdio or in process) and hands it to the
// stream's session without waiting: a stream that does not drain is not
// worth holding a tool call or the loop for.
func (st *listenStream) send(uri string) {
	n := mcp.JSONRPCNotification{JSONRPC: mcp.JSONRPC_VERSION, Notification: mcp.Notification{
		Method: string(mcp.MethodNotificationResourceUpdated),
		Params: mcp.NotificationParams{Meta: map[string]any{mcp.MetaKeySubscriptionID: st.id},
			AdditionalFields: map[string]any{"uri": uri}},
	}}
	if sse, ok := st.cs.(server.SessionWithStreamableHTTPConfig); ok {
		sse.UpgradeToSSEWhenReceiveNotification()
	}
	select {
	case st.cs.NotificationChannel() <- n:
	default:
	}
}
