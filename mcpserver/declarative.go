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

type validateResult struct {
	WorkspaceRoot string         `json:"workspace_root"`
	WorkspaceID   string         `json:"workspace_id"`
	Sources       []string       `json:"sources"`
	Config        map[string]any `json:"config" jsonschema:"The effective configuration."`
	Valid         bool           `json:"valid"`
	Diagnostics   []string       `json:"diagnostics" jsonschema:"What sbf corrected, each as a sentence."`
}

// prepareResult is prepare_workspace's v1 answer, from what the engine
// recorded.
type prepareResult struct {
	InstanceID          string                   `json:"instance_id"`
	WorkspaceRoot       string                   `json:"workspace_root"`
	WorkspaceID         string                   `json:"workspace_id"`
	BackendInstanceName string                   `json:"backend_instance_name"`
	Phase               string                   `json:"phase,omitempty"`
	Runtime             string                   `json:"runtime"`
	RuntimeReady        bool                     `json:"runtime_ready"`
	DockerCommand       *string                  `json:"docker_command"`
	Network             *reconcile.Network       `json:"network"`
	IncludeServices     bool                     `json:"include_services"`
	WaitForReady        bool                     `json:"wait_for_ready"`
	Services            map[string]any           `json:"services"`
	ServiceReadiness    map[string]any           `json:"service_readiness"`
	ConnectionEnv       map[string]string        `json:"connection_env" jsonschema:"The services' variables, secrets redacted."`
	EnvInjections       []reconcile.EnvInjection `json:"env_injections"`
	Plan                plan.Report              `json:"plan"`
	WorkspacePaths      *workspacePaths          `json:"workspace_paths,omitempty"`
}

type workspacePaths struct {
	Preferred string   `json:"preferred"`
	Writable  []string `json:"writable"`
}

type planResult struct {
	WorkspaceRoot string      `json:"workspace_root"`
	Plan          plan.Report `json:"plan" jsonschema:"The actions, each with its sandbox, action and cause."`
	Text          string      `json:"text" jsonschema:"The plan as sbf plan prints it."`
}

type applyResult struct {
	WorkspaceRoot string                    `json:"workspace_root"`
	Plan          plan.Report               `json:"plan"`
	Applied       bool                      `json:"applied"`
	Sandboxes     []reconcile.SandboxStatus `json:"sandboxes" jsonschema:"Each sandbox's state after the run."`
}

type desiredResult struct {
	WorkspaceRoot    string           `json:"workspace_root"`
	WorkspaceID      string           `json:"workspace_id"`
	Sources          []string         `json:"sources"`
	Config           map[string]any   `json:"config"`
	ManagedOverrides managedOverrides `json:"managed_overrides"`
	Warnings         []string         `json:"warnings"`
}

type managedOverrides struct {
	Leases any      `json:"leases"`
	AdHoc  []string `json:"ad_hoc_sandboxes"`
}

func (s *Server) validate(ctx context.Context, a validateArgs) (*validateResult, error) {
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
	return &validateResult{r.Root, r.WorkspaceID, nonNil(r.Sources), config, true, sentences(r.Warnings)}, nil
}

func (s *Server) prepareWorkspace(ctx context.Context, a prepareArgs) (*prepareResult, error) {
	e, ws, err := s.instance(ctx, a.InstanceID)
	if err != nil {
		return nil, err
	}
	include := a.IncludeServices == nil || *a.IncludeServices
	out, err := s.prepare(ctx, ws, e.Sandbox, include, a.WaitForReady)
	if err != nil {
		return nil, err
	}
	out.InstanceID = a.InstanceID
	return out, nil
}

// prepare converges one sandbox's layers (never renewing its lease): an
// ad-hoc sandbox gets v1's bootstrap as desired state first.
func (s *Server) prepare(ctx context.Context, ws spec.Options, sandbox string, includeServices, wait bool) (
	*prepareResult, error) {
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
) (*prepareResult, error) {
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
	out := &prepareResult{InstanceID: sandbox, WorkspaceRoot: r.Root, WorkspaceID: r.WorkspaceID,
		BackendInstanceName: res.InstanceOf(sandbox), Runtime: "docker", RuntimeReady: p.RuntimeReady,
		DockerCommand: optional(p.DockerCommand), Network: p.Network,
		IncludeServices: includeServices && r.Config.Infra.IncludeServicesByDefault, WaitForReady: wait,
		Services: services, ServiceReadiness: readiness, ConnectionEnv: p.ConnectionEnv,
		EnvInjections: p.EnvInjections, Plan: res.Plan.Report()}
	if rec, ok := res.Recorded(sandbox); ok {
		out.Phase = string(rec.Phase)
	}
	if tgt, err := s.cfg.Engine.TargetOf(res, sandbox); err == nil {
		if preferred, writable, err := tgt.WorkspacePaths(ctx); err == nil {
			out.WorkspacePaths = &workspacePaths{preferred, writable}
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

func (s *Server) plan(ctx context.Context, a workspaceArgs) (*planResult, error) {
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
	return &planResult{res.Resolved.Root, res.Plan.Report(), text.String()}, err
}

func (s *Server) apply(ctx context.Context, a workspaceArgs) (*applyResult, error) {
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
	return &applyResult{res.Resolved.Root, res.Plan.Report(), res.Applied, res.Status()}, nil
}

func (s *Server) desiredState(ctx context.Context, a desiredArgs) (*desiredResult, error) {
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
	return &desiredResult{r.Root, r.WorkspaceID, nonNil(r.Sources), config,
		managedOverrides{r.Config.Leases, nonNil(adHoc)}, sentences(r.Warnings)}, nil
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
