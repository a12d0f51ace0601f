package mcpserver

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/sandboxforge/sbf/sandbox"
	"github.com/sandboxforge/sbf/sandbox/docker"

	"github.com/sandboxforge/sbf/internal/coded"
	"github.com/sandboxforge/sbf/internal/hostpath"
	"github.com/sandboxforge/sbf/spec"
)

type dockerBuildResult struct {
	execResult
	ImageTag       string                `json:"image_tag"`
	CachedImageTag string                `json:"cached_image_tag"`
	CacheStrategy  string                `json:"cache_strategy"`
	CacheHit       bool                  `json:"cache_hit"`
	Validation     any                   `json:"validation"`
	WorkspaceState docker.WorkspaceState `json:"workspace_state"`
}

type dockerComposeResult struct {
	execResult
	ProjectDir    string                `json:"project_dir"`
	Action        string                `json:"action"`
	Follow        bool                  `json:"compose_follow"`
	Since         *string               `json:"compose_since"`
	Tail          *int                  `json:"compose_tail"`
	Bridge        map[string]any        `json:"bridge"`
	ConnectionEnv map[string]string     `json:"connection_env"`
	Engine        *docker.EngineCompose `json:"engine,omitempty"`
	Warnings      *[]string             `json:"warnings,omitempty"` // null when the engine ran and warned of nothing
}

type validateImageResult struct {
	InstanceID       string                `json:"instance_id"`
	Valid            bool                  `json:"valid"`
	Reasons          []string              `json:"reasons"`
	Warnings         []string              `json:"warnings"`
	Recommendation   string                `json:"recommendation"`
	WorkspaceState   docker.WorkspaceState `json:"workspace_state"`
	ImageMetadata    map[string]any        `json:"image_metadata"`
	ExpectedImageTag string                `json:"expected_image_tag"`
	IgnoredChecks    []string              `json:"ignored_checks,omitempty"`
}

func (s *Server) dockerBuild(ctx context.Context, a dockerBuildArgs) (*dockerBuildResult, error) {
	_, d, err := s.docker(ctx, a.InstanceID)
	if err != nil {
		return nil, err
	}
	res, err := d.Build(
		ctx,
		docker.BuildRequest{InstanceID: a.InstanceID, ContextPath: a.ContextPath, ImageTag: a.ImageTag,
			Dockerfile: a.Dockerfile, Target: a.Target, BuildArgs: a.BuildArgs, NoCache: a.NoCache},
	)
	if err != nil {
		return nil, withInstance(err, a.InstanceID)
	}
	return &dockerBuildResult{dockerResult(a.InstanceID, res.DockerResult), res.ImageTag, res.CachedImageTag,
		res.CacheStrategy, res.CacheHit, res.Validation, res.WorkspaceState}, nil
}

func (s *Server) dockerCompose(ctx context.Context, a dockerComposeArgs) (*dockerComposeResult, error) {
	tgt, _, err := s.target(ctx, a.InstanceID)
	if err != nil {
		return nil, err
	}
	ws, err := s.optionsAt(tgt.Resolved.Root, tgt.Resolved.WorkspaceID, nil) // target checked that this server serves it
	if err != nil {
		return nil, err
	}
	req := docker.ComposeRequest{ProjectDir: a.ProjectDir, Action: a.Action, File: a.File, Services: a.Services,
		Detach: orDefault(a.Detach, true), Command: a.Command, Follow: a.Follow, Since: a.Since, Tail: a.Tail}
	var res docker.ComposeResult
	if docker.EngineOwned(tgt, req) {
		start := s.cfg.Engine.Clock.Now()
		var conv sandbox.Converged
		if conv, err = s.cfg.Engine.ComposeUp(ctx, ws, tgt.Sandbox); err == nil {
			res, err = docker.AfterEngineUp(ctx, tgt, req, conv, start)
		}
	} else {
		res, err = docker.Compose(ctx, tgt, req)
	}
	if err != nil {
		return nil, withInstance(err, a.InstanceID)
	}
	out := &dockerComposeResult{execResult: dockerResult(a.InstanceID, res.DockerResult), ProjectDir: a.ProjectDir,
		Action: res.Action, Follow: a.Follow, Since: optional(a.Since), Tail: a.Tail, Bridge: res.Bridge,
		ConnectionEnv: res.ConnectionEnv}
	if res.Engine != nil {
		out.Engine, out.Warnings = res.Engine, &res.Warnings
	}
	return out, nil
}

func (s *Server) validateImage(ctx context.Context, a validateImageArgs) (*validateImageResult, error) {
	tgt, policy, err := s.target(ctx, a.InstanceID)
	if err != nil {
		return nil, err
	}
	r := tgt.Resolved
	if a.WorkspaceRoot != "" {
		if r, err = s.otherWorkspace(ctx, policy, tgt.Resolved.Root, a.WorkspaceRoot); err != nil {
			return nil, err
		}
	}
	checks, ignored, err := imageChecks(docker.DefaultImageChecks(r.Config.Build), a.Checks)
	if err != nil {
		return nil, err
	}
	d, err := docker.For(ctx, tgt)
	if err != nil {
		return nil, withInstance(err, a.InstanceID)
	}
	st := docker.ReadWorkspaceState(ctx, r.Root, r.Config.Build, s.cfg.Engine.Clock.Now())
	v, err := d.ValidateImage(ctx, a.ImageName, st, r.Config.Build, checks)
	if err != nil {
		return nil, withInstance(err, a.InstanceID)
	}
	return &validateImageResult{InstanceID: a.InstanceID, Valid: v.Valid, Reasons: v.Reasons, Warnings: v.Warnings,
		Recommendation: v.Recommendation, WorkspaceState: v.WorkspaceState, ImageMetadata: v.ImageMetadata,
		ExpectedImageTag: docker.ExpectedImageTag(a.ImageName, r.Config.Build.ImageCaching.TagFormat, st),
		IgnoredChecks:    ignored}, nil
}

// otherWorkspace loads the workspace validate_image was pointed at; it
// must lie inside the folders this server may read.
func (s *Server) otherWorkspace(
	ctx context.Context,
	policy hostpath.Policy,
	base, root string,
) (*spec.Resolved, error) {
	place, err := policy.Confine(base, root)
	if err != nil {
		return nil, err
	}
	place.Close()
	ws, err := s.workspace(ctx, place.Abs, nil)
	if err != nil {
		return nil, err
	}
	return s.load(ws)
}

// imageChecks applies validate_image's checks argument; keys that are no
// check are returned, not refused (v1 ignored them).
func imageChecks(c docker.ImageChecks, given map[string]any) (docker.ImageChecks, []string, error) {
	var ignored []string
	bad := func(k, want string) error {
		return newToolError(
			coded.InvalidArguments,
			fmt.Sprintf("checks.%s must be %s", k, want),
			map[string]any{"field": "checks." + k},
		)
	}
	for _, k := range slices.Sorted(maps.Keys(given)) {
		v := given[k]
		switch k {
		case "git_commit", "dependencies":
			b, ok := v.(bool)
			if !ok {
				return c, nil, bad(k, "a boolean")
			}
			if k == "git_commit" {
				c.GitCommit = b
			} else {
				c.Dependencies = b
			}
		case "git_dirty":
			p, err := dirtyCheck(v)
			if err != nil {
				return c, nil, bad(k, err.Error())
			}
			c.GitDirty = p
		case "max_age_hours":
			if v == nil {
				c.MaxAgeHours = nil
				continue
			}
			h, ok := v.(float64)
			if !ok {
				return c, nil, bad(k, "a number of hours or null")
			}
			c.MaxAgeHours = &h
		default:
			ignored = append(ignored, k)
		}
	}
	return c, ignored, nil
}

var dirtyPolicies = []string{"warn_and_rebuild", "rebuild", "warn", "warning", "fail", "disabled"}

// dirtyCheck reads git_dirty as a policy name, or true/false for the
// default policy and none.
func dirtyCheck(v any) (string, error) {
	switch x := v.(type) {
	case bool:
		if x {
			return "warn_and_rebuild", nil
		}
		return "disabled", nil
	case string:
		if p := strings.ToLower(strings.TrimSpace(x)); slices.Contains(dirtyPolicies, p) {
			return p, nil
		}
	}
	return "", fmt.Errorf("one of %s, or a boolean", strings.Join(dirtyPolicies, ", "))
}
