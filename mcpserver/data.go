package mcpserver

import (
	"context"
	"fmt"
	"time"

	"github.com/sandboxforge/sbf/sandbox"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/internal/coded"
	"github.com/sandboxforge/sbf/internal/hostpath"
)

type runArgs struct {
	InstanceID     string            `json:"instance_id"`
	Command        string            `json:"command" jsonschema:"Shell command, run with sh -c in the guest."`
	TimeoutSeconds *int              `json:"timeout_seconds,omitempty" default:"600" jsonschema:"Kill the command after this many seconds."`
	Workdir        string            `json:"workdir,omitempty" jsonschema:"Guest folder to run in."`
	Env            map[string]string `json:"env,omitempty" jsonschema:"Environment variables for the command."`
	MaxOutputBytes *int              `json:"max_output_bytes,omitempty" default:"1048576" jsonschema:"Bytes of stdout and of stderr kept (at most the operator's [policy] max_output_bytes); the rest is counted and dropped."`
}

type copyArgs struct {
	InstanceID string `json:"instance_id"`
	LocalPath  string `json:"local_path" jsonschema:"Host path, inside the workspace (or another allowed folder); relative to the workspace."`
	RemotePath string `json:"remote_path" jsonschema:"Guest path."`
}

type syncArgs struct {
	InstanceID string   `json:"instance_id"`
	LocalPath  string   `json:"local_path" jsonschema:"Host folder, inside the workspace (or another allowed folder)."`
	RemotePath string   `json:"remote_path" jsonschema:"Guest folder."`
	Exclude    []string `json:"exclude,omitempty" jsonschema:"fnmatch patterns replacing [sync] exclude_patterns (.git is still left out unless [sync] include_git)."`
}

type collectArgs struct {
	InstanceID  string   `json:"instance_id"`
	RemotePaths []string `json:"remote_paths" jsonschema:"Guest files or folders to collect."`
	LocalDest   string   `json:"local_dest" jsonschema:"Host folder (created if missing), inside the workspace or another allowed folder."`
}

// execResult is what a command run in a guest answers (run_command,
// run_ephemeral, the Docker tools), as v1 answered it.
type execResult struct {
	InstanceID      string `json:"instance_id"`
	Command         string `json:"command"`
	ExitCode        int    `json:"exit_code"`
	Stdout          string `json:"stdout"`
	Stderr          string `json:"stderr"`
	DurationMS      int64  `json:"duration_ms"`
	TimedOut        bool   `json:"timed_out"`
	StdoutTruncated bool   `json:"stdout_truncated"`
	StderrTruncated bool   `json:"stderr_truncated"`
}

func execOf(id, command string, r drivers.ExecResult) execResult {
	return execResult{InstanceID: id, Command: command, ExitCode: r.ExitCode, Stdout: r.Stdout, Stderr: r.Stderr,
		DurationMS: r.DurationMS, TimedOut: r.TimedOut, StdoutTruncated: r.StdoutTruncated,
		StderrTruncated: r.StderrTruncated}
}

// runResult is run_command's answer: the command's, with what was counted.
type runResult struct {
	execResult
	StdoutBytes    int64 `json:"stdout_bytes" jsonschema:"Bytes written, kept or not."`
	StderrBytes    int64 `json:"stderr_bytes" jsonschema:"Bytes written (and sbf's timeout note), kept or not."`
	MaxOutputBytes int   `json:"max_output_bytes" jsonschema:"Bytes of each stream kept."`
}

// copyResult is what a copy between host and guest answers.
type copyResult struct {
	InstanceID string `json:"instance_id"`
	LocalPath  string `json:"local_path"`
	RemotePath string `json:"remote_path"`
	Status     string `json:"status"`
}

// copyBackResult is a copy out of a guest's: it also says what it left out.
type copyBackResult struct {
	copyResult
	skippedResult
}

// skippedResult names what a copy from a guest left out: links that led
// outside the destination, protected paths (the tools' descriptions say so).
type skippedResult struct {
	SkippedLinks []hostpath.SkippedLink `json:"skipped_links"`
	SkippedPaths []hostpath.SkippedPath `json:"skipped_paths"`
	Warnings     []string               `json:"warnings,omitempty"`
}

type syncResult struct {
	InstanceID string   `json:"instance_id"`
	LocalPath  string   `json:"local_path"`
	RemotePath string   `json:"remote_path"`
	Archive    int64    `json:"archive_bytes"`
	Exclude    []string `json:"exclude"`
	Sent       int      `json:"files_sent"`
	Unchanged  int      `json:"files_unchanged"`
	Deleted    int      `json:"files_deleted"`
	Status     string   `json:"status"`
}

type collectResult struct {
	InstanceID string             `json:"instance_id"`
	LocalDest  string             `json:"local_dest"`
	Artifacts  []sandbox.Artifact `json:"artifacts" jsonschema:"Each path collected and where it went."`
	skippedResult
}

// target resolves an instance id to a running sandbox holding a live
// lease, with v1's errors (INSTANCE_NOT_FOUND, INSTANCE_TERMINAL,
// BACKEND_UNAVAILABLE).
func (s *Server) target(ctx context.Context, id string) (*sandbox.Target, hostpath.Policy, error) {
	e, ws, err := s.instance(ctx, id)
	if err != nil {
		return nil, hostpath.Policy{}, err
	}
	tgt, err := s.cfg.Engine.Target(ws, e.Sandbox)
	if err != nil {
		return nil, hostpath.Policy{}, v1Error(err, id) // an ad-hoc sandbox is undeclared once destroyed
	}
	if _, err := tgt.Driver(); err != nil {
		return nil, hostpath.Policy{}, err
	}
	s.remember(tgt.Resolved) // Target found a live lease: the loop watches it already
	note(ctx, specsOf, tgt.Resolved.Root, tgt.Resolved)
	s.used.touch(tgt.Resolved.Root, e.Sandbox, s.cfg.Engine.Clock.Now())
	return tgt, s.cfg.Policy.HostPaths(tgt.Resolved.Root), nil
}

func (s *Server) runCommand(ctx context.Context, a runArgs) (*runResult, error) {
	tgt, _, err := s.target(ctx, a.InstanceID)
	if err != nil {
		return nil, err
	}
	return s.execIn(ctx, tgt, a)
}

// execIn runs a run_command in a sandbox found already and answers as
// v1's run_command did.
func (s *Server) execIn(ctx context.Context, tgt *sandbox.Target, a runArgs) (*runResult, error) {
	timeout := 600 * time.Second
	if a.TimeoutSeconds != nil {
		if *a.TimeoutSeconds <= 0 {
			return nil, newToolError(
				coded.InvalidArguments,
				"timeout_seconds must be positive",
				map[string]any{"field": "timeout_seconds"},
			)
		}
		timeout = time.Duration(*a.TimeoutSeconds) * time.Second
	}
	req := drivers.ExecRequest{Command: a.Command, Timeout: timeout, Workdir: a.Workdir, Env: a.Env}
	if a.MaxOutputBytes != nil {
		req.MaxOutput = *a.MaxOutputBytes
	}
	// The limit applied is the request's under the operator's ceiling; the
	// backend keeps no more than an answer can carry (budget.go), so a
	// call holds O(budget) of output whatever the ceiling allows.
	limit := tgt.OutputLimit(req.MaxOutput)
	req.MaxOutput = min(limit, streamKeep)
	res, err := tgt.Exec(ctx, req)
	if err != nil {
		return nil, err
	}
	res.MaxOutput = limit
	return &runResult{execOf(a.InstanceID, a.Command, res), res.StdoutBytes, res.StderrBytes, res.MaxOutput}, nil
}

func (s *Server) copyTo(ctx context.Context, a copyArgs) (*copyResult, error) {
	tgt, policy, err := s.target(ctx, a.InstanceID)
	if err != nil {
		return nil, err
	}
	if err := tgt.CopyIn(ctx, policy, tgt.Resolved.Root, a.LocalPath, a.RemotePath); err != nil {
		return nil, err
	}
	return copied(a), nil
}

func (s *Server) copyFrom(ctx context.Context, a copyArgs) (*copyBackResult, error) {
	tgt, policy, err := s.target(ctx, a.InstanceID)
	if err != nil {
		return nil, err
	}
	rep, err := tgt.CopyOut(ctx, policy, tgt.Resolved.Root, a.RemotePath, a.LocalPath)
	if err != nil {
		return nil, err
	}
	return &copyBackResult{*copied(a), skipped(rep)}, nil
}

func copied(a copyArgs) *copyResult {
	return &copyResult{InstanceID: a.InstanceID, LocalPath: a.LocalPath, RemotePath: a.RemotePath, Status: "ok"}
}

// skipped names what a copy from a guest left out: links that led
// outside the destination and entries sbf protects.
func skipped(rep hostpath.Report) skippedResult {
	out := skippedResult{SkippedLinks: nonNil(rep.SkippedLinks), SkippedPaths: nonNil(rep.SkippedPaths)}
	if !rep.Empty() {
		out.Warnings = []string{fmt.Sprintf("left out %d link(s) leading outside the destination and %d protected "+
			"path(s); see skipped_links and skipped_paths", len(rep.SkippedLinks), len(rep.SkippedPaths))}
	}
	return out
}

func (s *Server) syncTo(ctx context.Context, a syncArgs) (*syncResult, error) {
	tgt, policy, err := s.target(ctx, a.InstanceID)
	if err != nil {
		return nil, err
	}
	rep, err := tgt.Sync(ctx, policy, tgt.Resolved.Root, a.LocalPath, a.RemotePath, tgt.SyncExcludes(a.Exclude))
	if err != nil {
		return nil, err
	}
	return &syncResult{a.InstanceID, rep.LocalPath, rep.RemotePath, rep.ArchiveBytes, rep.Exclude, rep.Sent,
		rep.Unchanged, rep.Deleted, rep.Status}, nil
}

func (s *Server) syncFrom(ctx context.Context, a copyArgs) (*copyBackResult, error) {
	return s.copyFrom(ctx, a)
}

func (s *Server) collect(ctx context.Context, a collectArgs) (*collectResult, error) {
	tgt, policy, err := s.target(ctx, a.InstanceID)
	if err != nil {
		return nil, err
	}
	if len(a.RemotePaths) == 0 { // v1's code and message, after its lease checks
		return nil, newToolError(coded.BackendCommand, "remote_paths cannot be empty",
			map[string]any{"remote_paths": []string{}, "field": "remote_paths"})
	}
	c, err := tgt.Collect(ctx, policy, tgt.Resolved.Root, a.RemotePaths, a.LocalDest)
	if err != nil {
		return nil, err
	}
	return &collectResult{a.InstanceID, c.Dest, nonNil(c.Artifacts), skipped(c.Report)}, nil
}
