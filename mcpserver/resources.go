package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/internal/hostpath"
	"github.com/sandboxforge/sbf/reconcile"
	"github.com/sandboxforge/sbf/spec"
)

// Resources: the spec's JSON Schema, and per served workspace its
// sandbox inventory and its effective policy. resources/list names the
// schema and the resources of the workspaces this server has served (the
// default one from the start, others as tools reach them, each addition
// announced with notifications/resources/list_changed); the templates
// name the rest. Reading a workspace's resource checks it is served, as
// every tool does.

const (
	schemaURI       = "sbf://schema/spec"
	workspacePrefix = "sbf://workspaces/"
	jsonMIME        = "application/json"
)

func (s *Server) registerResources() {
	s.mcp.AddResource(mcp.NewResource(schemaURI, "sbf spec schema",
		mcp.WithResourceDescription("The JSON Schema of .sandboxforge.toml (what sbf schema prints)."),
		mcp.WithMIMEType("application/schema+json")), s.readSchema)
	for _, kind := range resourceKinds {
		s.mcp.AddResourceTemplate(mcp.NewResourceTemplate(workspacePrefix+"{id}/"+kind, "workspace "+kind,
			mcp.WithTemplateDescription(resourceDescriptions[kind]), mcp.WithTemplateMIMEType(jsonMIME)),
			s.readWorkspaceResource)
	}
	if s.cfg.DefaultRoot != "" {
		if abs, id, err := spec.WorkspaceIdentity(s.cfg.DefaultRoot); err == nil {
			s.announceWorkspace(abs, id)
		}
	}
}

var resourceKinds = []string{"sandboxes", "snapshots", "policy"}

var resourceDescriptions = map[string]string{
	"sandboxes": "The workspace's sandboxes: phase, lease end, what the backend reports, drift, last error.",
	"snapshots": "The snapshots sbf took of the workspace's sandboxes and has not deleted (the state file's " +
		"index): sandbox, instance, name, driver, created_at, size_bytes.",
	"policy": "The workspace's effective policy: host folders copies may use, paths guest data may never " +
		"write, the operator's served roots, host execution, network egress, and the operator's ceilings " +
		"(instances, lease lengths, output and copy sizes: each bound, where it came from, the value in effect).",
}

// announceWorkspace lists a workspace's resources (once).
func (s *Server) announceWorkspace(abs, id string) {
	s.mu.Lock()
	if s.announced == nil {
		s.announced = map[string]bool{}
	}
	seen := s.announced[abs]
	s.announced[abs] = true
	s.mu.Unlock()
	if seen {
		return
	}
	for _, kind := range resourceKinds {
		s.mcp.AddResource(mcp.NewResource(workspacePrefix+id+"/"+kind, kind+" of "+abs,
			mcp.WithResourceDescription(resourceDescriptions[kind]), mcp.WithMIMEType(jsonMIME)),
			s.readWorkspaceResource)
	}
}

func (s *Server) readSchema(_ context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
	schema, err := spec.JSONSchema(drivers.Linked)
	if err != nil {
		return nil, err
	}
	return []mcp.ResourceContents{mcp.TextResourceContents{URI: req.Params.URI, MIMEType: "application/schema+json",
		Text: string(schema)}}, nil
}

func (s *Server) readWorkspaceResource(ctx context.Context, req mcp.ReadResourceRequest) (
	[]mcp.ResourceContents, error) {
	rest, _ := strings.CutPrefix(req.Params.URI, workspacePrefix)
	id, kind, _ := strings.Cut(rest, "/")
	root, err := s.rootOf(id)
	if err != nil {
		return nil, err
	}
	ws, ok, err := s.recorded(ctx, root)
	if err != nil {
		return nil, resourceError(err)
	}
	if !ok { // the same words as for a workspace never heard of: where it lives is not said
		return nil, unknownWorkspace(id)
	}
	var doc any
	switch kind {
	case "sandboxes":
		doc, err = s.inventory(ctx, ws, id)
	case "policy":
		doc, err = s.effectivePolicy(ctx, ws, id)
	case "snapshots":
		var r *spec.Resolved
		if r, err = s.load(ws); err == nil {
			doc, err = snapshotIndex(r, id)
		}
	default:
		return nil, fmt.Errorf("no resource %s", clip(req.Params.URI))
	}
	if err != nil {
		return nil, resourceError(err)
	}
	text, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return nil, err
	}
	return []mcp.ResourceContents{mcp.TextResourceContents{URI: req.Params.URI, MIMEType: jsonMIME,
		Text: string(text)}}, nil
}

// rootOf finds the workspace a resource's id names among those this
// server knows: its default one, those it touched, those with instances.
func (s *Server) rootOf(id string) (string, error) {
	candidates := []string{s.cfg.DefaultRoot}
	s.mu.Lock()
	candidates = append(candidates, slices.Sorted(maps.Keys(s.touched))...)
	s.mu.Unlock()
	entries, _ := s.index.All()
	for _, e := range entries {
		if e.WorkspaceID == id {
			candidates = append(candidates, e.WorkspaceRoot)
		}
	}
	for _, root := range candidates {
		if _, wid, err := spec.WorkspaceIdentity(root); err == nil && wid == id && root != "" {
			return root, nil
		}
	}
	return "", unknownWorkspace(id)
}

func unknownWorkspace(id string) error {
	return fmt.Errorf("no workspace %s is known to this server", clip(id))
}

// inventory is what status shows for each of the workspace's sandboxes.
func (s *Server) inventory(ctx context.Context, ws spec.Options, id string) (any, error) {
	res, err := s.cfg.Engine.Plan(ctx, ws, reconcile.Options{Intent: reconcile.Reconcile{}})
	if res == nil {
		return nil, err
	}
	rows := []map[string]any{}
	for _, st := range res.Status() {
		row := asMap(st)
		if e, ok := s.index.Lookup(st.Instance); ok {
			row["instance_id"] = instanceID(e)
		}
		rows = append(rows, row)
	}
	return map[string]any{"workspace_root": ws.Root, "workspace_id": id, "sandboxes": rows}, nil
}

// effectivePolicy is what the operator's policy and the workspace allow.
func (s *Server) effectivePolicy(ctx context.Context, ws spec.Options, id string) (any, error) {
	r, err := s.load(ws)
	if err != nil {
		return nil, err
	}
	protected := []map[string]string{}
	for _, rule := range hostpath.Protected {
		protected = append(protected, map[string]string{"pattern": rule.Pattern, "why": rule.Why})
	}
	for _, p := range r.Config.Sync.Protect {
		protected = append(protected, map[string]string{"pattern": p, "why": "listed in [sync] protect"})
	}
	client, err := s.declaredRoots(ctx)
	if err != nil {
		return nil, err
	}
	return map[string]any{
		"workspace_root": ws.Root, "workspace_id": id,
		"host_paths": map[string]any{"allowed_roots": nonNil(s.cfg.Policy.HostPaths(ws.Root).Roots),
			"protected_from_guest_writes": protected},
		"served_workspace_roots": nonNil(s.cfg.Policy.WorkspaceRoots), "client_roots": client,
		"host_exec_allowed": s.cfg.Policy.HostExec,
		"ports":             map[string]any{"bind": "127.0.0.1", "non_loopback": false},
		"network":           networkPolicy(r),
		"ceilings":          r.Ceilings,
	}, nil
}

// resourceError is a failure as a resources/read error message, which
// carries no envelope: its code leads it.
func resourceError(err error) error {
	te := bounded(asToolError(err))
	return errors.New(te.Code + ": " + te.Message)
}
