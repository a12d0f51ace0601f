package mcpserver

import (
	"context"
	"time"

	"github.com/sandboxforge/sbf/sandbox"
)

type statsArgs struct {
	InstanceID string `json:"instance_id"`
}

type healthArgs struct {
	WorkspaceRoot string `json:"workspace_root,omitempty" jsonschema:"The workspace to check (default: the server's)."`
}

var statsHints = map[string]hints{"get_instance_stats": readOnly, "health": readOnly}

func (s *Server) registerStats() {
	addTool(s, toolDef{name: "get_instance_stats", set: setObserve, title: "Get a sandbox's resource use",
		about: "Read a running instance's CPU, load, memory, disk, uptime and processes (from its /proc and df). " +
			"Returns them, its lease left and its last command."}, s.instanceStats)
	addTool(s, toolDef{name: "health", set: setObserve, title: "Check sandbox health",
		about: "Check every sandbox of a workspace that holds a lease: is its VM running, does it answer a " +
			"command, how long is its lease. Returns healthy and each sandbox's phase, drift and problems."},
		s.health)
}

func (s *Server) instanceStats(ctx context.Context, a statsArgs) (any, error) {
	tgt, _, err := s.target(ctx, a.InstanceID)
	if err != nil {
		return nil, err
	}
	st, err := tgt.Stats(ctx)
	if err != nil {
		return nil, err
	}
	out := statsJSON(st)
	out["instance_id"], out["sandbox"], out["driver"] = a.InstanceID, tgt.Sandbox, tgt.DriverName
	out["lease"] = leaseJSON(tgt, s.cfg.Engine.Clock.Now())
	out["last_command"] = lastCommand(tgt)
	return out, nil
}

func statsJSON(st sandbox.Stats) map[string]any {
	return map[string]any{
		"cpu":  map[string]any{"count": st.CPUs, "percent": st.CPUPercent},
		"load": map[string]any{"one": loadAt(st.Load, 0), "five": loadAt(st.Load, 1), "fifteen": loadAt(st.Load, 2)},
		"memory": map[string]any{"total_bytes": st.MemoryTotal, "available_bytes": st.MemoryAvail,
			"used_bytes": st.MemoryUsed, "used_percent": percent(st.MemoryUsed, st.MemoryTotal)},
		"disk": map[string]any{"path": st.DiskPath, "total_bytes": st.DiskTotal, "used_bytes": st.DiskUsed,
			"available_bytes": st.DiskAvail, "used_percent": percent(st.DiskUsed, st.DiskTotal)},
		"uptime_seconds": st.UptimeSeconds, "processes": st.Processes,
		"shared_with_host": st.SharedWithHost, "partial": st.Partial,
	}
}

func loadAt(xs []float64, i int) any {
	if i < len(xs) {
		return xs[i]
	}
	return nil
}

func percent(part, whole int64) float64 {
	if whole <= 0 {
		return 0
	}
	return float64(part*1000/whole) / 10
}

func leaseJSON(tgt *sandbox.Target, now time.Time) map[string]any {
	l := tgt.LeaseLeft(now)
	if l == nil {
		return nil
	}
	return map[string]any{"expires_at": iso(l.ExpiresAt), "seconds_left": l.SecondsLeft}
}

// lastCommand is the newest command the history holds for the sandbox.
func lastCommand(tgt *sandbox.Target) any {
	if ev := tgt.LastCommand(); ev != nil {
		return *ev
	}
	return nil
}

func (s *Server) health(ctx context.Context, a healthArgs) (any, error) {
	ws, err := s.workspace(ctx, a.WorkspaceRoot, nil)
	if err != nil {
		return nil, err
	}
	rows, healthy, err := s.cfg.Engine.Health(ctx, ws)
	if err != nil {
		return nil, err
	}
	out := []map[string]any{}
	for _, row := range rows {
		m := asMap(row)
		if e, ok := s.index.Lookup(row.Instance); ok {
			m["instance_id"] = instanceID(e)
		}
		out = append(out, m)
	}
	return map[string]any{"workspace_root": ws.Root, "healthy": healthy, "sandboxes": out}, nil
}
