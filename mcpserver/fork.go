package mcpserver

import (
	"context"
	"fmt"

	"github.com/sandboxforge/sbf/reconcile"
	"github.com/sandboxforge/sbf/state"
)

// fork_instance (issue 44): running copies of an instance from its
// memory. The tool renames its arguments into the engine's ForkRequest;
// the engine decides the rest (names, leases, the cap, the capability).

type forkArgs struct {
	InstanceID string `json:"instance_id" jsonschema:"The running instance to fork."`
	Count      *int   `json:"count,omitempty" jsonschema:"How many children." default:"1"`
}

type forkResult struct {
	SourceInstanceID string      `json:"source_instance_id"`
	Children         []forkChild `json:"children"`
	Count            int         `json:"count"`
	PausedMS         int64       `json:"paused_ms" jsonschema:"How long the source was paused."`
}

type forkChild struct {
	InstanceID          string `json:"instance_id"`
	BackendInstanceName string `json:"backend_instance_name"`
	ExpiresAt           string `json:"expires_at"`
}

func (s *Server) forkInstance(ctx context.Context, a forkArgs) (*forkResult, error) {
	e, ws, err := s.instance(ctx, a.InstanceID)
	if err != nil {
		return nil, err
	}
	count := 1
	if a.Count != nil {
		count = *a.Count
	}
	// Children named inst_…-N are their own instance ids.
	req := reconcile.ForkRequest{Source: e.Sandbox, Count: count, NamePrefix: newInstanceID(),
		Audit: audited("fork_instance")}
	res, err := s.cfg.Engine.Fork(ctx, ws, req)
	if err != nil {
		return nil, v1Error(err, a.InstanceID)
	}
	children := []forkChild{}
	for _, c := range res.Children {
		children = append(children, forkChild{instanceID(state.IndexEntry{Sandbox: c.Sandbox, Instance: c.Instance}),
			c.Instance, iso(c.ExpiresAt)})
	}
	if len(children) == 0 {
		return nil, fmt.Errorf("forking %s made no child", a.InstanceID)
	}
	return &forkResult{a.InstanceID, children, len(children), res.Paused.Milliseconds()}, nil
}
