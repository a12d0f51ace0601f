package mcpserver

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/sandboxforge/sbf/sandbox"
	"github.com/sandboxforge/sbf/sandbox/docker"

	"github.com/sandboxforge/sbf/internal/coded"
)

type dockerBuildArgs struct {
	InstanceID  string            `json:"instance_id"`
	ContextPath string            `json:"context_path" jsonschema:"Build context: a folder in the guest."`
	ImageTag    string            `json:"image_tag" jsonschema:"Tag of the image to build (repository:tag)."`
	Dockerfile  string            `json:"dockerfile,omitempty" jsonschema:"Dockerfile path (docker build -f)."`
	BuildArgs   map[string]string `json:"build_args,omitempty" jsonschema:"Build args; they override GIT_COMMIT, GIT_BRANCH, BUILD_TIMESTAMP, DEPENDENCIES_HASH and WORKSPACE_CONTENT_HASH, which sbf passes from the workspace."`
	Target      string            `json:"target,omitempty" jsonschema:"Build stage (docker build --target)."`
	NoCache     bool              `json:"no_cache,omitempty" default:"false" jsonschema:"Skip the [build] image cache and Docker's layer cache."`
}

type dockerRunArgs struct {
	InstanceID string            `json:"instance_id"`
	Image      string            `json:"image" jsonschema:"Image to run."`
	Command    string            `json:"command,omitempty" jsonschema:"Command, run with sh -lc in the container."`
	Name       string            `json:"name,omitempty" jsonschema:"Container name."`
	Env        map[string]string `json:"env,omitempty" jsonschema:"Environment variables (-e)."`
	Volumes    []string          `json:"volumes,omitempty" jsonschema:"Volumes (-v), as docker takes them."`
	Ports      []string          `json:"ports,omitempty" jsonschema:"Published ports (-p), as docker takes them."`
	Workdir    string            `json:"workdir,omitempty" jsonschema:"Working directory in the container (-w)."`
	Detach     *bool             `json:"detach,omitempty" default:"true" jsonschema:"Run in the background (-d)."`
	Privileged bool              `json:"privileged,omitempty" default:"false" jsonschema:"Run privileged."`
}

type dockerExecArgs struct {
	InstanceID     string `json:"instance_id"`
	Container      string `json:"container" jsonschema:"Container name or id."`
	Command        string `json:"command" jsonschema:"Command, run with sh -lc in the container."`
	TimeoutSeconds *int   `json:"timeout_seconds,omitempty" default:"600" jsonschema:"Kill the command after this many seconds."`
}

type dockerLogsArgs struct {
	InstanceID string `json:"instance_id"`
	Container  string `json:"container" jsonschema:"Container name or id."`
	Tail       *int   `json:"tail,omitempty" default:"500" jsonschema:"Last lines to return."`
	Follow     bool   `json:"follow,omitempty" default:"false" jsonschema:"Follow the output; returns what came within 30 seconds."`
	Since      string `json:"since,omitempty" jsonschema:"Only lines since this time or duration (docker logs --since)."`
}

type dockerComposeArgs struct {
	InstanceID string   `json:"instance_id"`
	ProjectDir string   `json:"project_dir" jsonschema:"Guest folder of the compose project; the workspace root (or ~/.sbf/sbf-SANDBOX) names the stack sbf converges (compose = true)."`
	Action     string   `json:"action" jsonschema:"The compose command."`
	File       string   `json:"file,omitempty" jsonschema:"Compose file (-f)."`
	Services   []string `json:"services,omitempty" jsonschema:"Services the action applies to (exec uses the first)."`
	Detach     *bool    `json:"detach,omitempty" default:"true" jsonschema:"up -d."`
	Command    string   `json:"command,omitempty" jsonschema:"Command for exec, run with sh -lc."`
	Follow     bool     `json:"follow,omitempty" default:"false" jsonschema:"logs --follow; returns what came within 30 seconds."`
	Since      string   `json:"since,omitempty" jsonschema:"logs --since."`
	Tail       *int     `json:"tail,omitempty" jsonschema:"logs --tail."`
}

type dockerPsArgs struct {
	InstanceID string `json:"instance_id"`
	All        bool   `json:"all,omitempty" default:"false" jsonschema:"Include stopped containers (-a)."`
}

type dockerImagesArgs struct {
	InstanceID string `json:"instance_id"`
}

type dockerCleanupArgs struct {
	InstanceID string `json:"instance_id"`
	Mode       string `json:"mode,omitempty" default:"\"safe\"" jsonschema:"safe: stopped containers and dangling images; aggressive: also every unused image, network and volume."`
}

type validateImageArgs struct {
	InstanceID    string         `json:"instance_id"`
	ImageName     string         `json:"image_name" jsonschema:"Image in the guest to judge."`
	WorkspaceRoot string         `json:"workspace_root,omitempty" jsonschema:"Workspace whose git state and [build] settings the image is judged against; default the instance's (must be inside the allowed folders)."`
	Checks        map[string]any `json:"checks,omitempty" jsonschema:"Overrides of the checks (max_age_hours null: any age)."`
}

// docker resolves an instance and its docker command (v1's gates, then
// RUNTIME_NOT_READY).
func (s *Server) docker(ctx context.Context, id string) (*sandbox.Target, *docker.Docker, error) {
	tgt, _, err := s.target(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	d, err := docker.For(ctx, tgt)
	return tgt, d, withInstance(err, id)
}

// withInstance names the instance in a coded error's details, as v1's
// docker errors did.
func withInstance(err error, id string) error {
	var ce *coded.Error
	if errors.As(err, &ce) {
		if _, set := ce.Details["instance_id"]; !set {
			ce.Details["instance_id"] = id
		}
	}
	return err
}

// dockerResult is the fields every docker tool returns.
func dockerResult(id string, r docker.DockerResult) execResult {
	return execOf(id, r.Command, r.ExecResult)
}

// containerResult is a Docker tool's answer that names its container.
type containerResult struct {
	execResult
	Container *string `json:"container"`
}

type dockerPsResult struct {
	execResult
	All bool `json:"all"`
}

type dockerCleanupResult struct {
	execResult
	Mode string `json:"mode"`
}

func orDefault[T any](p *T, def T) T {
	if p == nil {
		return def
	}
	return *p
}

func (s *Server) dockerRun(ctx context.Context, a dockerRunArgs) (*containerResult, error) {
	_, d, err := s.docker(ctx, a.InstanceID)
	if err != nil {
		return nil, err
	}
	res, err := d.Run(ctx, docker.RunSpec{Image: a.Image, Command: a.Command, Name: a.Name, Workdir: a.Workdir,
		Env:     a.Env,
		Volumes: a.Volumes, Ports: a.Ports, Detach: orDefault(a.Detach, true), Privileged: a.Privileged})
	if err != nil {
		return nil, withInstance(err, a.InstanceID)
	}
	var container *string
	if first, _, _ := strings.Cut(strings.TrimSpace(res.Stdout), "\n"); first != "" {
		container = &first
	}
	return &containerResult{dockerResult(a.InstanceID, res), container}, nil
}

func (s *Server) dockerExec(ctx context.Context, a dockerExecArgs) (*containerResult, error) {
	timeout := orDefault(a.TimeoutSeconds, 600)
	if timeout <= 0 {
		return nil, newToolError(
			coded.InvalidArguments,
			"timeout_seconds must be positive",
			map[string]any{"field": "timeout_seconds"},
		)
	}
	_, d, err := s.docker(ctx, a.InstanceID)
	if err != nil {
		return nil, err
	}
	res, err := d.Exec(ctx, a.Container, a.Command, time.Duration(timeout)*time.Second)
	if err != nil {
		return nil, withInstance(err, a.InstanceID)
	}
	return &containerResult{dockerResult(a.InstanceID, res), &a.Container}, nil
}

func (s *Server) dockerLogs(ctx context.Context, a dockerLogsArgs) (*containerResult, error) {
	_, d, err := s.docker(ctx, a.InstanceID)
	if err != nil {
		return nil, err
	}
	res, err := d.Logs(ctx, a.Container, orDefault(a.Tail, 500), a.Follow, a.Since)
	if err != nil {
		return nil, withInstance(err, a.InstanceID)
	}
	return &containerResult{dockerResult(a.InstanceID, res), &a.Container}, nil
}

func (s *Server) dockerPs(ctx context.Context, a dockerPsArgs) (*dockerPsResult, error) {
	_, d, err := s.docker(ctx, a.InstanceID)
	if err != nil {
		return nil, err
	}
	res, err := d.Command(ctx, docker.PsArgs(a.All))
	if err != nil {
		return nil, withInstance(err, a.InstanceID)
	}
	return &dockerPsResult{dockerResult(a.InstanceID, res), a.All}, nil
}

func (s *Server) dockerImages(ctx context.Context, a dockerImagesArgs) (*execResult, error) {
	_, d, err := s.docker(ctx, a.InstanceID)
	if err != nil {
		return nil, err
	}
	res, err := d.Command(ctx, []string{"images"})
	if err != nil {
		return nil, withInstance(err, a.InstanceID)
	}
	r := dockerResult(a.InstanceID, res)
	return &r, nil
}

func (s *Server) dockerCleanup(ctx context.Context, a dockerCleanupArgs) (*dockerCleanupResult, error) {
	_, d, err := s.docker(ctx, a.InstanceID)
	if err != nil {
		return nil, err
	}
	mode := a.Mode
	if mode == "" {
		mode = "safe"
	}
	res, err := d.Cleanup(ctx, mode)
	if err != nil {
		return nil, withInstance(err, a.InstanceID)
	}
	return &dockerCleanupResult{dockerResult(a.InstanceID, res), mode}, nil
}
