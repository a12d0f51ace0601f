package mcpserver

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/sandboxforge/sbf/reconcile"
	"github.com/sandboxforge/sbf/reconcile/plan"
	"github.com/sandboxforge/sbf/spec"
)

// Log notifications (issue 31): what the reconcile loop does to sandboxes
// reaches every client as notifications/message, filtered by the level
// the client chose with logging/setLevel (mcp-go keeps it per session;
// "error" until set, so a client that never asks hears only failures), or,
// for a client of 2026-07-28, on its requests that asked for a level
// (requestlog.go). An agent otherwise learns that its sandbox expired only
// when its next call fails.

// leaseWarning is how long before a lease ends the loop warns; the loop
// passes at least every sweep interval (a minute by default), so one pass
// falls inside it.
const leaseWarning = 5 * time.Minute

// logLogger names sbf's notifications, so a client can tell them from
// its own.
const logLogger = "sbf.reconcile"

// loopLog remembers the sessions to tell and the leases already warned
// about (one warning per lease end: an extended lease is warned again).
type loopLog struct {
	mu       sync.Mutex
	sessions map[string]server.ClientSession
	warned   map[string]time.Time // workspace root + sandbox → the lease end a client heard of
	// egressSeen is, per workspace root + sandbox, the newest egress log
	// entry already looked at (egresslog.go).
	egressSeen map[string]time.Time
	// requestlog.go: the 2026-07-28 requests in flight that asked for a
	// level, and the registered sessions that sent 2026-07-28 requests.
	requests map[*loggedRequest]bool
	modern   map[string]bool
}

// surfaceOptions are the capabilities of issue 31's part 2 that mcp-go
// implements once declared: logging/setLevel, completion/complete and
// prompts (resource subscriptions are declared with the resources, and
// tracked in subscriptions.go).
func (s *Server) surfaceOptions(hooks *server.Hooks) []server.ServerOption {
	s.logs.sessions, s.logs.warned = map[string]server.ClientSession{}, map[string]time.Time{}
	s.logs.egressSeen = map[string]time.Time{}
	s.watchSubscriptions(hooks)
	s.watchListens(hooks)        // listen.go
	s.watchLoggedRequests(hooks) // requestlog.go
	hooks.AddOnRegisterSession(func(_ context.Context, cs server.ClientSession) {
		s.logs.mu.Lock()
		s.logs.sessions[cs.SessionID()] = cs
		s.logs.mu.Unlock()
	})
	hooks.AddOnUnregisterSession(func(_ context.Context, cs server.ClientSession) {
		s.logs.mu.Lock()
		delete(s.logs.sessions, cs.SessionID())
		delete(s.logs.modern, cs.SessionID())
		s.logs.mu.Unlock()
	})
	return []server.ServerOption{
		server.WithLogging(),
		server.WithCompletions(),
		server.WithPromptCapabilities(false),
		server.WithPromptCompletionProvider(completer{s}),
		server.WithResourceCompletionProvider(completer{s}),
	}
}

// logged reports a loop pass to the clients before passing it on.
func (s *Server) logged(report func(spec.Options, *reconcile.Result, error)) func(spec.Options,
	*reconcile.Result, error) {
	return func(ws spec.Options, res *reconcile.Result, err error) {
		s.logPass(ws, res, err)
		s.resourcesChanged() // subscriptions.go
		if report != nil {
			report(ws, res, err)
		}
	}
}

func (s *Server) logPass(ws spec.Options, res *reconcile.Result, err error) {
	if err != nil {
		s.notify(mcp.LoggingLevelError, ws.Root, map[string]any{"event": "reconcile_failed", "workspace_root": ws.Root,
			"message": clip(err.Error())})
	}
	if res == nil {
		return
	}
	s.logPassDone(ws.Root, res)
	if res.Outcome != nil {
		for _, a := range res.Outcome.Done {
			s.logAction(ws.Root, res, a, nil)
		}
		for _, f := range res.Outcome.Failed {
			s.logAction(ws.Root, res, f.Action, f.Err)
		}
	}
	s.warnLeases(ws.Root, res)
	s.warnEgress(ws.Root, res) // egresslog.go
}

// logPassDone says at debug that a pass looked at a workspace: what it
// found to do and when the next lease there ends.
func (s *Server) logPassDone(root string, res *reconcile.Result) {
	done, failed := 0, 0
	if res.Outcome != nil {
		done, failed = len(res.Outcome.Done), len(res.Outcome.Failed)
	}
	data := map[string]any{"event": "loop_pass", "workspace_root": root, "sandboxes": len(res.Desired.Sandboxes),
		"actions_done": done, "actions_failed": failed}
	msg := fmt.Sprintf("loop pass: %d sandboxes, %d actions done, %d failed", len(res.Desired.Sandboxes), done, failed)
	if !res.NextExpiry.IsZero() {
		data["next_expiry"] = iso(res.NextExpiry)
		msg += "; next lease end " + iso(res.NextExpiry)
	}
	data["message"] = msg
	s.notify(mcp.LoggingLevelDebug, root, data)
}

// logAction: an expiry or a deletion is a warning (the agent loses its
// sandbox); a VM the loop created, started or replaced was repaired (the
// loop never renews, so it creates only what vanished), a notice; the
// rest is info; a failed action an error.
func (s *Server) logAction(root string, res *reconcile.Result, a plan.Action, err error) {
	level, event := mcp.LoggingLevelInfo, string(a.Kind)
	switch a.Kind {
	case plan.Expire:
		level, event = mcp.LoggingLevelWarning, "expired"
	case plan.Delete:
		level, event = mcp.LoggingLevelWarning, "deleted"
	case plan.Create, plan.Start, plan.Replace, plan.Update:
		level, event = mcp.LoggingLevelNotice, "repaired"
	}
	msg := fmt.Sprintf("sandbox %s: %s (%s)", a.Sandbox, a.Kind, a.Cause)
	if err != nil {
		level, event, msg = mcp.LoggingLevelError, event+"_failed", msg+": "+err.Error()
	}
	s.notify(level, root, map[string]any{"event": event, "action": string(a.Kind), "workspace_root": root,
		"sandbox": a.Sandbox, "instance_id": s.idOf(res, a.Sandbox), "cause": a.Cause, "message": clip(msg)})
}

// warnLeases warns once per lease end that falls within leaseWarning:
// once some client heard it, so a lease that enters the warning while no
// client listens (a 2026-07-28 client between requests) is warned of at
// the next pass again.
func (s *Server) warnLeases(root string, res *reconcile.Result) {
	now := res.Now
	for _, name := range slices.Sorted(maps.Keys(res.Desired.Sandboxes)) {
		ds := res.Desired.Sandboxes[name]
		if ds.Lease == nil || now.IsZero() || !now.Before(ds.Lease.ExpiresAt) ||
			ds.Lease.ExpiresAt.Sub(now) > leaseWarning {
			continue
		}
		key := root + "\x00" + name
		s.logs.mu.Lock()
		seen := s.logs.warned[key].Equal(ds.Lease.ExpiresAt)
		s.logs.mu.Unlock()
		if seen {
			continue
		}
		left := ds.Lease.ExpiresAt.Sub(now).Round(time.Second)
		heard := s.notify(mcp.LoggingLevelWarning, root, map[string]any{"event": "lease_expiring",
			"workspace_root": root, "sandbox": name, "instance_id": s.idOf(res, name),
			"expires_at": iso(ds.Lease.ExpiresAt), "seconds_left": int(left.Seconds()),
			"message": fmt.Sprintf("sandbox %s expires in %s; extend_instance_ttl keeps it", name, left)})
		if heard {
			s.logs.mu.Lock()
			s.logs.warned[key] = ds.Lease.ExpiresAt
			s.logs.mu.Unlock()
		}
	}
}

// notify sends one log notification to every session that may use the
// workspace and whose level lets it through, and to the 2026-07-28
// requests in flight that asked for it (requestlog.go); heard says whether
// any took it. A session that cannot take it (gone, blocked) is skipped:
// a log line is never worth holding the loop. A registered session that
// spoke 2026-07-28 set no session level and is told only on its requests:
// the protocol forbids a log line a request did not ask for.
func (s *Server) notify(level mcp.LoggingLevel, root string, data map[string]any) (heard bool) {
	s.logs.mu.Lock()
	sessions, modern := maps.Clone(s.logs.sessions), maps.Clone(s.logs.modern)
	s.logs.mu.Unlock()
	n := mcp.NewLoggingMessageNotification(level, logLogger, data)
	for _, id := range slices.Sorted(maps.Keys(sessions)) {
		cs := sessions[id]
		if modern[id] || !s.mayHear(cs, root) {
			continue
		}
		if lv, ok := cs.(server.SessionWithLogging); ok && level.ShouldSendTo(lv.GetLogLevel()) &&
			s.mcp.SendLogMessageToSpecificClient(id, n) == nil {
			heard = true
		}
	}
	return s.tellRequests(n, root) || heard
}

// mayHear tells whether a session may learn of a workspace: the one a
// tool of that session could use. A client that declared MCP roots hears
// of workspaces inside the roots it listed; until it listed them (the
// first tool call asks; the loop cannot), of none.
func (s *Server) mayHear(cs server.ClientSession, root string) bool {
	sc, listed := s.knownScope(cs) // handles.go
	return listed && sc.may(root)
}
