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

type statsResult struct {
	InstanceID     string         `json:"instance_id"`
	Sandbox        string         `json:"sandbox"`
	Driver         string         `json:"driver"`
	CPU            map[string]any `json:"cpu"`
	Load           map[string]any `json:"load"`
	Memory         map[string]any `json:"memory"`
	Disk           map[string]any `json:"disk"`
	UptimeSeconds  float64        `json:"uptime_seconds"`
	Processes      int            `json:"processes"`
	SharedWithHost bool           `json:"shared_with_host"`
	Partial        bool           `json:"partial" jsonschema:"Some figures could not be read."`
	Lease          *leaseLeft     `json:"lease"`
	LastCommand    *sandbox.Event `json:"last_command"`
}

type leaseLeft struct {
	ExpiresAt   string `json:"expires_at"`
	SecondsLeft int64  `json:"seconds_left"`
}

type healthResult struct {
	WorkspaceRoot string           `json:"workspace_root"`
	Healthy       bool             `json:"healthy"`
	Sandboxes     []map[string]any `json:"sandboxes" jsonschema:"Each sandbox's phase, drift and problems."`
}

func (s *Server) instanceStats(ctx context.Context, a statsArgs) (*statsResult, error) {
	tgt, _, err := s.target(ctx, a.InstanceID)
	if err != nil {
		return nil, err
	}
	st, err := tgt.Stats(ctx)
	if err != nil {
		return nil, err
	}
	return &statsResult{InstanceID: a.InstanceID, Sandbox: tgt.Sandbox, Driver: tgt.DriverName,
		CPU:  map[string]any{"count": st.CPUs, "percent": st.CPUPercent},
		Load: map[string]any{"one": loadAt(st.Load, 0), "five": loadAt(st.Load, 1), "fifteen": loadAt(st.Load, 2)},
		Memory: map[string]any{"total_bytes": st.MemoryTotal, "available_bytes": st.MemoryAvail,
			"used_bytes": st.MemoryUsed, "used_percent": percent(st.MemoryUsed, st.MemoryTotal)},
		Disk: map[string]any{"path": st.DiskPath, "total_bytes": st.DiskTotal, "used_bytes": st.DiskUsed,
			"available_bytes": st.DiskAvail, "used_percent": percent(st.DiskUsed, st.DiskTotal)},
		UptimeSeconds: st.UptimeSeconds, Processes: st.Processes, SharedWithHost: st.SharedWithHost,
		Partial: st.Partial, Lease: leaseJSON(tgt, s.cfg.Engine.Clock.Now()), LastCommand: tgt.LastCommand()}, nil
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

func leaseJSON(tgt *sandbox.Target, now time.Time) *leaseLeft {
	l := tgt.LeaseLeft(now)
	if l == nil {
		return nil
	}
	return &leaseLeft{iso(l.ExpiresAt), l.SecondsLeft}
}

func (s *Server) health(ctx context.Context, a healthArgs) (*healthResult, error) {
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
	return &healthResult{ws.Root, healthy, out}, nil
}
