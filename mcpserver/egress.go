package mcpserver

import (
	"context"
	"fmt"

	"github.com/sandboxforge/sbf/egress"
	"github.com/sandboxforge/sbf/internal/coded"
)

type egressLogArgs struct {
	InstanceID string `json:"instance_id"`
	Tail       *int   `json:"tail,omitempty" default:"100" jsonschema:"The newest decisions to return."`
}

type egressLogResult struct {
	InstanceID string         `json:"instance_id"`
	Sandbox    string         `json:"sandbox"`
	Entries    []egress.Entry `json:"entries" jsonschema:"The newest egress decisions: destination, verdict, time."`
	Count      int            `json:"count"`
}

func (s *Server) egressLog(ctx context.Context, a egressLogArgs) (*egressLogResult, error) {
	tail := 100
	if a.Tail != nil {
		if tail = *a.Tail; tail <= 0 || tail > 1000 {
			return nil, newToolError(coded.InvalidArguments, fmt.Sprintf("tail must be 1 to %d", 1000),
				map[string]any{"field": "tail"})
		}
	}
	tgt, _, err := s.target(ctx, a.InstanceID)
	if err != nil {
		return nil, err
	}
	entries, err := tgt.EgressLog(tail)
	if err != nil {
		return nil, err
	}
	return &egressLogResult{a.InstanceID, tgt.Sandbox, entries, len(entries)}, nil
}
