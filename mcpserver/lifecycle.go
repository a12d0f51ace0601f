package mcpserver

import (
	"context"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/sandboxforge/sbf/reconcile"
	"github.com/sandboxforge/sbf/spec"
	"github.com/sandboxforge/sbf/state"
)

type createArgs struct {
	WorkspaceRoot string   `json:"workspace_root" jsonschema:"Absolute path of the workspace folder (where .sandboxforge.toml lives)."`
	TTLMinutes    *int     `json:"ttl_minutes,omitempty" jsonschema:"Lease length in minutes; default [lease] default_ttl (30). At most [lease] max_ttl."`
	AutoBootstrap *bool    `json:"auto_bootstrap,omitempty" default:"true" jsonschema:"Prepare the workspace (runtime, services, compose) right after creation."`
	WaitForReady  bool     `json:"wait_for_ready,omitempty" default:"false" jsonschema:"When bootstrapping, wait until services answer their readiness probes."`
	CPUs          *int     `json:"cpus,omitempty" jsonschema:"Override [vm] cpus for this instance."`
	MemoryGiB     *float64 `json:"memory_gib,omitempty" jsonschema:"Override [vm] memory_gib for this instance."`
	DiskGiB       *float64 `json:"disk_gib,omitempty" jsonschema:"Override [vm] disk_gib for this instance."`
}

type instanceArgs struct {
	InstanceID string `json:"instance_id"`
	Force      bool   `json:"force,omitempty" default:"false" jsonschema:"Delete the VM at once, without a clean stop (a VM still booting always is)."`
}

type extendArgs struct {
	InstanceID string `json:"instance_id"`
	TTLMinutes int    `json:"ttl_minutes" jsonschema:"Minutes to add to the lease; at most [lease] max_ttl per call, within max_lifetime overall."`
}

type listArgs struct {
	IncludeExpired bool `json:"include_expired,omitempty" default:"false" jsonschema:"Also list expired and destroyed instances."`
}

// shapeKeys are the [vm] keys a tool's shape arguments set.
func shapeKeys(cpus *int, memoryGiB, diskGiB *float64) map[string]any {
	keys := map[string]any{}
	if cpus != nil {
		keys["cpus"] = int64(*cpus)
	}
	if memoryGiB != nil {
		keys["memory_gib"] = *memoryGiB
	}
	if diskGiB != nil {
		keys["disk_gib"] = *diskGiB
	}
	return keys
}

// summaryResult is a new sandbox as v1 summed it up (create_instance,
// clone_instance): its instance_id is described, so it is listed though
// clone_instance takes one.
type summaryResult struct {
	InstanceID          string  `json:"instance_id" jsonschema:"Its id, which the other tools take."`
	Backend             string  `json:"backend" jsonschema:"The backend (driver) running it."`
	Status              string  `json:"status"`
	CreatedAt           *string `json:"created_at" jsonschema:"When its VM was made (RFC 3339, UTC)."`
	ExpiresAt           *string `json:"expires_at" jsonschema:"When its lease ends."`
	SSHPort             *int    `json:"ssh_port"`
	WorkspaceRoot       string  `json:"workspace_root"`
	WorkspaceID         string  `json:"workspace_id"`
	BackendInstanceName string  `json:"backend_instance_name" jsonschema:"The backend's name for it."`
}

type createResult struct {
	summaryResult
	AutoBootstrap bool           `json:"auto_bootstrap"`
	WaitForReady  bool           `json:"wait_for_ready"`
	Bootstrap     *prepareResult `json:"bootstrap,omitempty" jsonschema:"What preparing the workspace did (prepare_workspace's answer)."`
}

type destroyResult struct {
	InstanceID string `json:"instance_id"`
	Backend    string `json:"backend"`
	Status     string `json:"status"`
}

type extendResult struct {
	InstanceID         string `json:"instance_id"`
	ExpiresAt          string `json:"expires_at" jsonschema:"The new lease end."`
	TTLExtendedMinutes int    `json:"ttl_extended_minutes"`
}

func (s *Server) createInstance(ctx context.Context, a createArgs) (*createResult, error) {
	ws, err := s.workspace(ctx, a.WorkspaceRoot, nil)
	if err != nil {
		return nil, err
	}
	id := newInstanceID()
	req := reconcile.Up{Sandboxes: []string{id}, Keys: shapeKeys(a.CPUs, a.MemoryGiB, a.DiskGiB)}
	if a.TTLMinutes != nil {
		req.TTL, req.TTLAsGiven = reconcile.TTL(time.Duration(*a.TTLMinutes)*time.Minute), minutesAsGiven(*a.TTLMinutes)
	}
	boot := a.AutoBootstrap == nil || *a.AutoBootstrap
	if boot {
		req.Bootstrap = &reconcile.Bootstrap{Services: true} // converged by this apply, as desired state
	}
	res, err := s.cfg.Engine.Apply(ctx, ws, reconcile.Options{Intent: req,
		Audit:  audited("create_instance"),
		NoWait: !a.WaitForReady})
	if rec, _ := res.Recorded(id); err != nil && boot && rec.CreatedAt != nil {
		// The VM runs; what failed is inside it. v1 left the VM running too.
		return nil, newToolError("WORKSPACE_BOOTSTRAP_FAILED", "instance "+id+" was created but preparing it failed: "+
			err.Error(), map[string]any{"instance_id": id, "workspace_root": res.Resolved.Root,
			"bootstrap_error": asToolError(err)})
	}
	if err != nil {
		return nil, v1Error(err, "") // nothing was made: the refusal names no instance
	}
	s.touch(res.Resolved)
	out := &createResult{summaryResult: s.instanceSummary(res, id), AutoBootstrap: boot, WaitForReady: a.WaitForReady}
	if boot {
		out.Bootstrap, err = s.prepared(ctx, res, id, true, a.WaitForReady)
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// instanceSummary is create_instance's v1 result shape.
func (s *Server) instanceSummary(res *reconcile.Result, sandbox string) summaryResult {
	r := res.Resolved
	instance := res.InstanceOf(sandbox)
	out := summaryResult{InstanceID: sandbox, Backend: r.Host.ResolveDriver(r.Config.Sandboxes[sandbox].Driver),
		Status: "running", CreatedAt: isoPtr(created(res, sandbox)), WorkspaceRoot: r.Root,
		WorkspaceID: r.WorkspaceID, BackendInstanceName: instance}
	if l, ok := r.Config.Leases[sandbox]; ok {
		out.ExpiresAt = isoPtr(&l.ExpiresAt)
	}
	if inst, ok := res.Observed.Instances[instance]; ok {
		out.SSHPort = sshPort(inst.SSH)
	}
	return out
}

func (s *Server) destroyInstance(ctx context.Context, a instanceArgs) (*destroyResult, error) {
	e, ws, err := s.instance(ctx, a.InstanceID)
	if err != nil {
		return nil, err
	}
	req := reconcile.Destroy{Sandboxes: []string{e.Sandbox}, Force: a.Force}
	if _, err := s.cfg.Engine.Apply(ctx, ws, reconcile.Options{Intent: req,
		Audit: audited("destroy_instance")}); err != nil {
		return nil, v1Error(err, a.InstanceID)
	}
	s.execSessions.EndInstance(e.Instance, "its sandbox was destroyed")
	return &destroyResult{a.InstanceID, e.Driver, "destroyed"}, nil
}

func (s *Server) extendInstance(ctx context.Context, a extendArgs) (*extendResult, error) {
	e, ws, err := s.instance(ctx, a.InstanceID)
	if err != nil {
		return nil, err
	}
	req := reconcile.Extend{Sandbox: e.Sandbox, By: time.Duration(a.TTLMinutes) * time.Minute,
		ByAsGiven: minutesAsGiven(a.TTLMinutes)}
	res, err := s.cfg.Engine.Apply(ctx, ws, reconcile.Options{Intent: req,
		Audit: audited("extend_instance_ttl")})
	if err != nil {
		return nil, v1Error(err, a.InstanceID)
	}
	s.touch(res.Resolved)
	s.used.touch(res.Resolved.Root, e.Sandbox, s.cfg.Engine.Clock.Now()) // v1 counted an extension as a use
	return &extendResult{a.InstanceID, iso(res.Resolved.Config.Leases[e.Sandbox].ExpiresAt), a.TTLMinutes}, nil
}

// listInstances reads every workspace the host index knows, observing
// each once. It never changes state: an expired lease is reported as
// expired, and its VM is left for the loop to delete.
func (s *Server) listInstances(ctx context.Context, a listArgs) (*listResult, error) {
	entries, err := s.index.All()
	if err != nil {
		return nil, err
	}
	client, err := s.declaredRoots(ctx)
	if err != nil {
		return nil, err
	}
	byRoot := map[string][]state.IndexEntry{}
	for _, e := range entries {
		if s.cfg.Policy.Workspace(e.WorkspaceRoot, client) == nil { // only the workspaces this server serves
			byRoot[e.WorkspaceRoot] = append(byRoot[e.WorkspaceRoot], e)
		}
	}
	instances := []map[string]any{}
	var problems []workspaceProblem
	listed := map[string]*spec.Resolved{}
	for _, root := range slices.Sorted(maps.Keys(byRoot)) {
		rows, r, err := s.workspaceRows(ctx, root, byRoot[root], a.IncludeExpired)
		if r != nil {
			listed[r.Root] = r
		}
		if err != nil {
			problems = append(problems, workspaceProblem{root, err})
		}
		instances = append(instances, rows...)
	}
	out := &listResult{Instances: instances, backendInfo: s.backendInfo(listed)}
	if len(problems) > 0 {
		out.ReconciliationError = reconciliationError(problems)
	}
	return out, nil
}

// minutesAsGiven is a ttl_minutes argument as a refusal quotes it: in the
// unit the client wrote, not one sbf would choose (2880 minutes, not 2d).
func minutesAsGiven(n int) string { return strconv.Itoa(n) + " minutes" }
