package mcpserver

import (
	"context"
	"maps"
	"time"
)

// Tools beyond SandboxForge v1's that agents use on a running sandbox
// (issue 24): guest files, ports, history, stats, snapshots and clones,
// resources.
func (s *Server) registerAgentTools() {
	s.metrics = newMetrics(s)
	s.registerFiles()
	s.registerPorts()
	s.registerHistory()
	s.registerStats()
	s.registerSnapshots()
	s.registerResources()
	s.registerEgress()
}

// Their hints join toolHints before any server registers a tool.
func init() {
	observing := map[string]hints{"get_history": readOnly, "get_egress_log": readOnly}
	for _, h := range []map[string]hints{fileHints, portHints, observing, statsHints, snapshotHints} {
		maps.Copy(toolHints, h)
	}
}

// afterCall is what every tool call leaves besides its answer: a count
// in the metrics, and a line in its sandbox's history.
func (s *Server) afterCall(ctx context.Context, tool string, args, out any, err error, start time.Time) {
	s.metrics.toolCall(tool, err, s.cfg.Engine.Clock.Now().Sub(start))
	s.recordCall(ctx, tool, args, out, err, start)
}
