package mcpserver

import (
	"context"
	"strings"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/internal/coded"
	"github.com/sandboxforge/sbf/reconcile"
)

type ephemeralArgs struct {
	WorkspaceRoot  string            `json:"workspace_root" jsonschema:"Absolute path of the workspace folder (where .sandboxforge.toml lives)."`
	Command        string            `json:"command" jsonschema:"Shell command, run with sh -c in the guest."`
	TimeoutSeconds *int              `json:"timeout_seconds,omitempty" default:"600" jsonschema:"Kill the command after this many seconds."`
	Workdir        string            `json:"workdir,omitempty" jsonschema:"Guest folder to run in."`
	Env            map[string]string `json:"env,omitempty" jsonschema:"Environment variables for the command."`
	MaxOutputBytes *int              `json:"max_output_bytes,omitempty" default:"1048576" jsonschema:"Bytes of stdout and of stderr kept; the rest is counted."`
	CPUs           *int              `json:"cpus,omitempty" jsonschema:"Override [vm] cpus for the sandbox (a pool's spare of that shape is taken)."`
	MemoryGiB      *float64          `json:"memory_gib,omitempty" jsonschema:"Override [vm] memory_gib for the sandbox."`
}

// ephemeralResult is run_command's answer and what became of the sandbox.
type ephemeralResult struct {
	runResult
	BackendInstanceName string   `json:"backend_instance_name" jsonschema:"The VM it ran in."`
	WarmSpare           bool     `json:"warm_spare" jsonschema:"The VM was a pool's booted spare."`
	SandboxReadyMS      int64    `json:"sandbox_ready_ms" jsonschema:"How long the sandbox took to be ready."`
	Destroyed           bool     `json:"destroyed" jsonschema:"The sandbox is gone again."`
	Warnings            []string `json:"warnings,omitempty"`
}

// runEphemeral is create_instance (no bootstrap), run_command and
// destroy_instance as one call: the same engine intents, so the cap, the
// lease bounds and the history hold as they do for the three.
func (s *Server) runEphemeral(ctx context.Context, a ephemeralArgs) (out *ephemeralResult, err error) {
	if strings.TrimSpace(a.Command) == "" {
		return nil, newToolError(coded.InvalidArguments, "command is empty", map[string]any{"field": "command"})
	}
	ws, err := s.workspace(ctx, a.WorkspaceRoot, nil)
	if err != nil {
		return nil, err
	}
	keys := shapeKeys(a.CPUs, a.MemoryGiB, nil)
	id := newInstanceID()
	start := s.cfg.Engine.Clock.Now()
	res, err := s.cfg.Engine.Apply(ctx, ws, reconcile.Options{
		Intent: reconcile.Up{Sandboxes: []string{id}, Keys: keys}, Audit: audited("run_ephemeral")})
	if err != nil {
		return nil, v1Error(err, "") // nothing was made: the refusal names no instance
	}
	s.touch(res.Resolved) // should the destroy below fail, the loop ends the lease
	ready := s.cfg.Engine.Clock.Now().Sub(start)
	defer func() {
		_, derr := s.cfg.Engine.Apply(context.WithoutCancel(ctx), ws, reconcile.Options{
			Intent: reconcile.Destroy{Sandboxes: []string{id}}, Audit: audited("run_ephemeral")})
		if out != nil {
			out.Destroyed = derr == nil
			if derr != nil {
				out.Warnings = []string{"destroying the sandbox failed (its lease still ends on its own): " +
					clip(derr.Error())}
			}
		}
	}()
	tgt, err := s.cfg.Engine.TargetOf(res, id)
	if err != nil {
		return nil, err
	}
	run := runArgs{InstanceID: id, Command: a.Command, TimeoutSeconds: a.TimeoutSeconds, Workdir: a.Workdir,
		Env: a.Env, MaxOutputBytes: a.MaxOutputBytes}
	result, err := s.execIn(ctx, tgt, run)
	if err != nil {
		return nil, err
	}
	_, _, warm := drivers.ParsePoolName(res.InstanceOf(id))
	return &ephemeralResult{runResult: *result, BackendInstanceName: res.InstanceOf(id), WarmSpare: warm,
		SandboxReadyMS: ready.Milliseconds()}, nil
}
