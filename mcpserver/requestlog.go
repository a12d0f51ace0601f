package mcpserver

import (
	"context"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// The loop's log lines for clients of protocol 2026-07-28 (SEP-2575). Such
// a client never sends logging/setLevel (mcp-go answers it -32601): it puts
// a level in one request's _meta (io.modelcontextprotocol/logLevel), and
// notifications/message is request-scoped: the server MUST NOT emit it for
// a request without a level, and MAY emit it at or above the level only on
// that request's response stream, before the response, never on a
// subscriptions/listen stream (spec: server/utilities/logging). Nor is
// there a session to address: over Streamable HTTP each of its requests is
// served by a session of its own that mcp-go never registers, so the
// registered-session fan-out of logging.go cannot reach it.
//
// The loop's doings belong to no request, so "the client's level" is each
// of its requests' own: a line goes on every 2026-07-28 request in flight
// that asked for a level letting it through (a read_session waiting for
// output, a create_instance booting a VM). Between requests the client
// hears no log line; its listen stream tells it of each phase or lease
// change (listen.go), which is what an expiry or a repair changes.

// loggedRequest is such a request in flight.
type loggedRequest struct {
	ctx   context.Context // the request's: done when it is answered; carries its level to mcp-go
	cs    server.ClientSession
	level mcp.LoggingLevel
}

// watchLoggedRequests keeps the 2026-07-28 requests in flight that asked
// for a level, and marks the registered sessions (stdio, in process) that
// sent such requests, which logging.go's fan-out then leaves alone.
func (s *Server) watchLoggedRequests(hooks *server.Hooks) {
	s.logs.requests, s.logs.modern = map[*loggedRequest]bool{}, map[string]bool{}
	hooks.AddBeforeAny(func(ctx context.Context, _ any, method mcp.MCPMethod, _ any) {
		info, cs := server.RequestProtocolInfoFromContext(ctx), server.ClientSessionFromContext(ctx)
		if info == nil || !info.Modern || cs == nil {
			return
		}
		r := &loggedRequest{ctx: ctx, cs: cs, level: info.LogLevel}
		s.logs.mu.Lock()
		if id := cs.SessionID(); id != "" {
			s.logs.modern[id] = true
		}
		logged := r.level != "" && method != mcp.MethodSubscriptionsListen
		if logged {
			s.logs.requests[r] = true
		}
		s.logs.mu.Unlock()
		if logged {
			context.AfterFunc(ctx, func() {
				s.logs.mu.Lock()
				delete(s.logs.requests, r)
				s.logs.mu.Unlock()
			})
		}
	})
}

// tellRequests sends a log line on each request in flight whose level
// lets it through and whose client may hear of the workspace: once a
// session, as a stdio or in-process session's requests share one stream.
// mcp-go checks the request's level again and routes it to the request's
// stream.
func (s *Server) tellRequests(n mcp.LoggingMessageNotification, root string) (heard bool) {
	for _, r := range s.requestsInFlight(n.Params.Level) {
		if s.mayHear(r.cs, root) && s.mcp.SendLogMessageToClient(r.ctx, n) == nil {
			heard = true
		}
	}
	return heard
}

// requestsInFlight are the unanswered requests, one a session, whose
// level lets a line of this level through; any level when level is "".
func (s *Server) requestsInFlight(level mcp.LoggingLevel) []*loggedRequest {
	s.logs.mu.Lock()
	defer s.logs.mu.Unlock()
	var out []*loggedRequest
	taken := map[server.ClientSession]bool{}
	for r := range s.logs.requests {
		// Done before its AfterFunc ran: answered, its stream closed.
		if r.ctx.Err() != nil || taken[r.cs] || level != "" && !level.ShouldSendTo(r.level) {
			continue
		}
		taken[r.cs] = true
		out = append(out, r)
	}
	return out
}
