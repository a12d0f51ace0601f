package mcpserver

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/sandboxforge/sbf/egress"
	"github.com/sandboxforge/sbf/reconcile"
)

// Egress denials (issue 31): after each loop pass, the clients that may
// use a workspace hear which connections its sandboxes' network policies
// refused since the last pass, one warning per sandbox. The guest chooses
// what it tries to reach, so the notification is bounded: the newest
// egressTail entries are read, and at most egressShown destinations are
// named (each clipped, with a count).
const (
	egressTail  = 200
	egressShown = 5
)

// warnEgress reports each restricted sandbox's new denials.
func (s *Server) warnEgress(root string, res *reconcile.Result) {
	if res.Resolved == nil || !s.anyoneHears(root) {
		return
	}
	for _, name := range slices.Sorted(maps.Keys(res.Resolved.Config.Sandboxes)) {
		if !res.Resolved.Config.Sandboxes[name].Network.Restricted() {
			continue
		}
		tgt, err := s.cfg.Engine.TargetOf(res, name)
		if err != nil {
			continue // not live: nothing of it can be refused
		}
		entries, err := tgt.EgressLog(egressTail)
		if err != nil {
			continue
		}
		key := root + "\x00" + name
		s.logs.mu.Lock()
		// The first look only marks where the log was: denials from before
		// this server ran are not news.
		since, looked := s.logs.egressSeen[key]
		var denied []egress.Entry
		for _, e := range entries {
			if e.Decision == egress.Denied && e.Time.After(since) {
				denied = append(denied, e)
			}
		}
		if len(entries) > 0 {
			since = entries[len(entries)-1].Time
		}
		s.logs.egressSeen[key] = since
		s.logs.mu.Unlock()
		if looked && len(denied) > 0 {
			s.notify(mcp.LoggingLevelWarning, root, egressWarning(root, name, s.idOf(res, name), denied))
		}
	}
}

// egressWarning is one sandbox's denials as a notification's data.
func egressWarning(root, name, id string, denied []egress.Entry) map[string]any {
	counts := map[string]int{}
	for _, e := range denied {
		dest := clip(e.Host)
		if dest == "" {
			dest = "(" + clip(e.Reason) + ")"
		} else if e.Port != 0 {
			dest += ":" + strconv.Itoa(e.Port)
		}
		counts[dest]++
	}
	dests := slices.SortedFunc(maps.Keys(counts), func(a, b string) int {
		if counts[a] != counts[b] {
			return counts[b] - counts[a]
		}
		return strings.Compare(a, b)
	})
	var named []string
	for _, d := range dests[:min(len(dests), egressShown)] {
		named = append(named, fmt.Sprintf("%s ×%d", d, counts[d]))
	}
	if more := len(dests) - len(named); more > 0 {
		named = append(named, fmt.Sprintf("%d more", more))
	}
	return map[string]any{"event": "egress_denied", "workspace_root": root, "sandbox": name, "instance_id": id,
		"denied": len(denied), "destinations": named, "last_at": iso(denied[len(denied)-1].Time.UTC()),
		"message": fmt.Sprintf("sandbox %s: its network policy refused %d connection(s): %s; "+
			"'sbf egress log %s' shows each, and [network] allow lists what may pass",
			name, len(denied), strings.Join(named, ", "), name)}
}

// anyoneHears says whether some session, or some 2026-07-28 request in
// flight (requestlog.go), may hear of the workspace, so a pass nobody
// listens to reads no log.
func (s *Server) anyoneHears(root string) bool {
	s.logs.mu.Lock()
	sessions := slices.Collect(maps.Values(s.logs.sessions))
	s.logs.mu.Unlock()
	for _, r := range s.requestsInFlight("") {
		sessions = append(sessions, r.cs)
	}
	return slices.ContainsFunc(sessions, func(cs server.ClientSession) bool { return s.mayHear(cs, root) })
}
