package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"slices"

	"github.com/sandboxforge/sbf/reconcile/plan"

	"github.com/sandboxforge/sbf/reconcile"
	"github.com/sandboxforge/sbf/spec"
)

type validateArgs struct {
	WorkspaceRoot string         `json:"workspace_root" jsonschema:"Absolute path of the workspace folder."`
	Overrides     map[string]any `json:"overrides,omitempty" jsonschema:"Keys to override for this check only, as a nested object (null resets nullable keys)."`
}

type prepareArgs struct {
	InstanceID      string `json:"instance_id"`
	IncludeServices *bool  `json:"include_services,omitempty" default:"true" jsonschema:"Run the sandbox's MySQL/Redis services (ANDed with [infra] include_services_by_default)."`
	WaitForReady    bool   `json:"wait_for_ready,omitempty" default:"false" jsonschema:"Wait until services answer their readiness probes."`
}

type workspaceArgs struct {
	WorkspaceRoot string   `json:"workspace_root,omitempty" jsonschema:"Absolute path of the workspace folder; default: the server's workspace."`
	Targets       []string `json:"targets,omitempty" jsonschema:"Only these sandboxes (default: all)."`
}

type desiredArgs struct {
	WorkspaceRoot string `json:"workspace_root,omitempty" jsonschema:"Absolute path of the workspace folder; default: the server's workspace."`
}

func (s *Server) registerWorkspace() {
	addTool(s, toolDef{name: "validate_workspace_config", set: setWorkspace, v1: true,
		title: "Validate the workspace config",
		about: "Resolve a workspace's layered .sandboxforge.toml (with optional overrides). Returns valid, every " +
			"problem as diagnostics (key and message) and the effective config."}, s.validate)
	addTool(s, toolDef{name: "prepare_workspace", set: setWorkspace, v1: true, title: "Prepare a sandbox's workspace",
		about: "Converge everything an instance's workspace declares for it: VM, container runtime, services, " +
			"compose stack. Returns runtime_ready, docker_command, services and their readiness, connection_env " +
			"(secrets redacted) and workspace_paths."}, s.prepareWorkspace)
	addTool(s, toolDef{name: "plan", set: setWorkspace, title: "Plan the workspace's sandboxes",
		about: "Show what apply would change in a workspace. Returns plan, its actions each with its cause, and " +
			"text, the plan as sbf plan prints it."}, s.plan)
	addTool(s, toolDef{name: "apply", set: setWorkspace, title: "Apply the workspace's sandboxes",
		about: "Converge a workspace to its desired state (acquiring or renewing leases). Returns applied, the " +
			"plan it executed and each sandbox's state after it."}, s.apply)
	addTool(s, toolDef{name: "get_desired_state", set: setWorkspace, title: "Show the desired state",
		about: "Read a workspace's resolved desired state. Returns config, its sources and managed_overrides " +
			"(leases, ad-hoc sandboxes)."}, s.desiredState)
}

func (s *Server) validate(ctx context.Context, a validateArgs) (any, error) {
	var extra json.RawMessage
	if a.Overrides != nil {
		extra, _ = json.Marshal(a.Overrides)
	}
	ws, err := s.workspace(ctx, a.WorkspaceRoot, extra)
	if err != nil {
		return nil, err
	}
	v, err := s.cfg.Engine.Validate(ctx, ws)
	if err != nil {
		return nil, err
	}
	if !v.Valid() {
		te := asToolError(v.Err())
		te.Details["workspace_root"] = v.Root
		return nil, te
	}
	r := v.Resolved
	config, err := v1Config(r)
	if err != nil {
		return nil, err
	}
	return map[string]any{"workspace_root": r.Root, "workspace_id": r.WorkspaceID, "sources": nonNil(r.Sources),
		"config": config, "valid": true, "diagnostics": sentences(r.Warnings)}, nil
}

func (s *Server) prepareWorkspace(ctx context.Context, a prepareArgs) (any, error) {
	e, ws, err := s.instance(ctx, a.InstanceID)
	if err != nil {
		return nil, err
	}
	include := a.IncludeServices == nil || *a.IncludeServices
	out, err := s.prepare(ctx, ws, e.Sandbox, include, a.WaitForReady)
	if err != nil {
		return nil, err
	}
	out["instance_id"] = a.InstanceID
	return out, nil
}

// prepare converges one sandbox's layers (never renewing its lease): an
// ad-hoc sandbox gets v1's bootstrap as desired state first.
func (s *Server) prepare(ctx context.Context, ws spec.Options, sandbox string, includeServices, wait bool) (
	map[string]any, error) {
	req := reconcile.Prepare{Sandbox: sandbox, Bootstrap: &reconcile.Bootstrap{Services: includeServices}}
	res, err := s.cfg.Engine.Apply(ctx, ws, reconcile.Options{Intent: req, NoWait: !wait,
		Audit: audited("prepare_workspace")})
	if err != nil {
		return nil, v1Error(err, sandbox)
	}
	s.touch(res.Resolved)
	return s.prepared(ctx, res, sandbox, includeServices, wait)
}

// prepared is prepare_workspace's v1 result, from what the engine
// recorded.
func (s *Server) prepared(
	ctx context.Context,
	res *reconcile.Result,
	sandbox string,
	includeServices, wait bool,
) (map[string]any, error) {
	p, err := s.cfg.Engine.Prepared(res, sandbox)
	if err != nil {
		return nil, err
	}
	r := res.Resolved
	services, readiness := map[string]any{}, map[string]any{}
	for name, sr := range p.Services {
		svc := map[string]any{
			"status":    "running",
			"container": sr.Container,
			"image":     sr.Image,
			"host":      sr.Container,
			"port":      sr.Port,
		}
		if name == "mysql" {
			svc["database"] = r.Config.Infra.MySQL.Database
		}
		services[name] = svc
		readiness[name] = map[string]any{"ready": sr.Ready, "attempts": sr.Attempts}
	}
	out := map[string]any{
		"instance_id": sandbox, "workspace_root": r.Root, "workspace_id": r.WorkspaceID,
		"backend_instance_name": res.InstanceOf(sandbox),
		"runtime":               "docker", "runtime_ready": p.RuntimeReady,
		"docker_command": nilIfEmpty(p.DockerCommand),
		"network":        p.Network, "include_services": includeServices && r.Config.Infra.IncludeServicesByDefault,
		"wait_for_ready": wait, "services": services, "service_readiness": readiness,
		"connection_env": p.ConnectionEnv, "env_injections": p.EnvInjections, "plan": res.Plan.Report(),
	}
	if rec := res.State.Sandboxes[sandbox]; rec != nil {
		out["phase"] = rec.Phase
	}
	if tgt, err := s.cfg.Engine.TargetOf(res, sandbox); err == nil {
		if preferred, writable, err := tgt.WorkspacePaths(ctx); err == nil {
			out["workspace_paths"] = map[string]any{"preferred": preferred, "writable": writable}
		}
	}
	return out, nil
}

// optional is a string that is null when empty.
func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func nilIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func (s *Server) plan(ctx context.Context, a workspaceArgs) (any, error) {
	ws, err := s.workspace(ctx, a.WorkspaceRoot, nil)
	if err != nil {
		return nil, err
	}
	res, err := s.cfg.Engine.Plan(ctx, ws, reconcile.Options{
		Intent: reconcile.Renew{Sandboxes: a.Targets, All: len(a.Targets) == 0}})
	if res == nil || res.Plan == nil {
		return nil, err
	}
	var text bytes.Buffer
	res.Plan.Render(&text, plan.Style{})
	res.Plan.RenderProblems(&text)
	return map[string]any{"workspace_root": res.Resolved.Root, "plan": res.Plan.Report(), "text": text.String()}, err
}

func (s *Server) apply(ctx context.Context, a workspaceArgs) (any, error) {
	ws, err := s.workspace(ctx, a.WorkspaceRoot, nil)
	if err != nil {
		return nil, err
	}
	res, err := s.cfg.Engine.Apply(ctx, ws, reconcile.Options{
		Intent: reconcile.Renew{Sandboxes: a.Targets, All: len(a.Targets) == 0}, Audit: audited("apply")})
	if res != nil && res.Resolved != nil {
		s.touch(res.Resolved)
	}
	if err != nil {
		return nil, err
	}
	return map[string]any{"workspace_root": res.Resolved.Root, "plan": res.Plan.Report(), "applied": res.Applied,
		"sandboxes": res.Status()}, nil
}

func (s *Server) desiredState(ctx context.Context, a desiredArgs) (any, error) {
	ws, err := s.workspace(ctx, a.WorkspaceRoot, nil)
	if err != nil {
		return nil, err
	}
	r, err := s.load(ws)
	if err != nil {
		return nil, err
	}
	config, err := v1Config(r)
	if err != nil {
		return nil, err
	}
	adHoc := slices.Sorted(maps.Keys(r.AdHoc))
	return map[string]any{
		"workspace_root": r.Root, "workspace_id": r.WorkspaceID, "sources": nonNil(r.Sources), "config": config,
		"managed_overrides": map[string]any{"leases": r.Config.Leases, "ad_hoc_sandboxes": nonNil(adHoc)},
		"warnings":          sentences(r.Warnings),
	}, nil
}

// sentences words problems sbf corrected on its own as v1 worded errors.
func sentences(es spec.Errors) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.Sentence()
	}
	return out
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
