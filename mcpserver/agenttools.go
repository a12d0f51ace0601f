package mcpserver

import (
	"context"
	"time"
)

// afterCall is what every tool call leaves besides its answer: a count
// in the metrics, and a line in its sandbox's history.
func (s *Server) afterCall(ctx context.Context, tool string, args, out any, err error, start time.Time) {
	s.metrics.toolCall(tool, err, s.cfg.Engine.Clock.Now().Sub(start))
	s.recordCall(ctx, tool, args, out, err, start)
}
