package mcpserver

import (
	"fmt"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/sandboxforge/sbf/reconcile"
)

// What a tool call's engine runs do reaches the clients as log lines, as
// the loop's passes do (logging.go), from the engine's own events
// (reconcile.WithEvents, beside the call's progress): each step's end at
// info (a create, the layers a converge brings up), its start and what it
// waits for at debug, a failure at error, and each lease end the run
// records at info (lease_acquired, lease_renewed). Every line names the
// workspace its run converged and reaches only the sessions that may use
// that workspace (notify); an event that names none is told to nobody.

// logStep turns one engine event of a tool call into a log line.
func (s *Server) logStep(ev reconcile.Event) {
	if ev.Workspace == "" {
		return
	}
	data := map[string]any{"workspace_root": ev.Workspace, "sandbox": ev.Sandbox}
	if strings.HasPrefix(ev.Sandbox, "inst_") {
		data["instance_id"] = ev.Sandbox // an ad-hoc sandbox's name is its instance id (instanceID)
	}
	level := mcp.LoggingLevelDebug
	switch {
	case ev.Lease != nil:
		level, data["event"], data["expires_at"] = mcp.LoggingLevelInfo, "lease_renewed", iso(ev.Lease.New)
		if ev.Lease.Acquired {
			data["event"] = "lease_acquired"
		}
		data["message"] = fmt.Sprintf("sandbox %s: lease until %s", ev.Sandbox, iso(ev.Lease.New))
	case ev.Done && ev.Err != nil:
		level, data["event"] = mcp.LoggingLevelError, string(ev.Kind)+"_failed"
		data["message"] = clip(fmt.Sprintf("sandbox %s: %s failed after %s: %v", ev.Sandbox, ev.Kind,
			ev.Elapsed.Round(time.Second), ev.Err))
	case ev.Done:
		level, data["event"] = mcp.LoggingLevelInfo, string(ev.Kind)
		data["message"] = fmt.Sprintf("sandbox %s: %s done in %s (step %d of %d)", ev.Sandbox, ev.Kind,
			ev.Elapsed.Round(time.Second), ev.Step, ev.Steps)
	case ev.Message != "":
		data["event"], data["message"] = string(ev.Kind)+"_waiting", clip(fmt.Sprintf("sandbox %s: %s: %s",
			ev.Sandbox, ev.Kind, ev.Message))
	default:
		data["event"] = string(ev.Kind) + "_started"
		data["message"] = fmt.Sprintf("sandbox %s: %s (step %d of %d)", ev.Sandbox, ev.Kind, ev.Step, ev.Steps)
	}
	if ev.Kind != "" {
		data["action"] = string(ev.Kind)
	}
	s.notify(level, ev.Workspace, data)
}
