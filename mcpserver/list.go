package mcpserver

import (
	"context"
	"sort"
	"time"

	"github.com/sandboxforge/sbf/internal/coded"
	"github.com/sandboxforge/sbf/reconcile"
	"github.com/sandboxforge/sbf/spec"
	"github.com/sandboxforge/sbf/state"
)

// workspaceRows builds list_instances records for one workspace from one
// observation.
func (s *Server) workspaceRows(
	ctx context.Context,
	root string,
	entries []state.IndexEntry,
	includeExpired bool,
) ([]map[string]any, *spec.Resolved, error) {
	ws, ok, err := s.recorded(ctx, root) // as the index has it: a recorded root is never rediscovered
	if err != nil || !ok {
		return nil, nil, err
	}
	res, err := s.cfg.Engine.Plan(ctx, ws, reconcile.Options{Intent: reconcile.Reconcile{}, Ended: includeExpired})
	if res == nil {
		return nil, nil, err
	}
	known := map[string]state.IndexEntry{}
	for _, e := range entries {
		known[e.Instance] = e
	}
	now := s.cfg.Engine.Clock.Now()
	var rows []map[string]any
	for _, st := range res.Status() {
		e, ok := known[st.Instance]
		if !ok {
			continue
		}
		status := v1Status(st, now)
		if !includeExpired && (status == "expired" || status == "destroyed") {
			continue
		}
		rec, recorded := res.Recorded(st.Name)
		row := map[string]any{
			"instance_id": instanceID(e), "backend_name": st.Driver, "profile_name": "workspace",
			"workspace_root": res.Resolved.Root, "workspace_id": res.Resolved.WorkspaceID,
			"status": status, "created_at": nil, "expires_at": isoPtr(st.ExpiresAt), "last_used_at": nil,
			"owner_session": s.cfg.Settings.Session, "ssh_port": nil, "backend_instance_name": st.Instance,
			"runtime_name": nil, "runtime_ready": false, "docker_command": nil,
			"live_exists": st.Live != "absent" && st.Live != "unknown", "live_status": st.Live,
			"reconciliation_drift": st.Drift != "" || (status == "expired" && st.Live != "absent" && st.Live != "unknown"),
			"sandbox":              st.Name, "phase": st.Phase, "last_error": st.LastError,
		}
		born := created(res, st.Name)
		row["created_at"], row["last_used_at"] = isoPtr(born), isoPtr(s.used.at(res.Resolved.Root, st.Name, born))
		if recorded {
			runtimeFields(row, rec)
		}
		if inst, ok := res.Observed.Instances[st.Instance]; ok {
			row["ssh_port"] = sshPort(inst.SSH)
		}
		rows = append(rows, row)
	}
	sort.SliceStable(rows, func(i, j int) bool {
		a, _ := rows[i]["created_at"].(string)
		b, _ := rows[j]["created_at"].(string)
		return a > b
	})
	return rows, res.Resolved, err
}

// runtimeFields fills v1's runtime columns from what the guest layer
// recorded.
func runtimeFields(row map[string]any, rec reconcile.Recorded) {
	if cmd := rec.DockerCommand; cmd != "" {
		row["runtime_name"], row["runtime_ready"], row["docker_command"] = "docker", true, cmd
	}
}

// v1Status maps a sandbox to v1's lease statuses (creating, running,
// destroyed, expired, error) plus sbf's stopped. A lease that has run out
// reads "expired" at once, but nothing is written: the loop deletes the
// VM and records the transition.
func v1Status(st reconcile.SandboxStatus, now time.Time) string {
	switch {
	case st.Lease == reconcile.LeaseEnded:
		return string(st.Phase)
	case st.Lease == reconcile.LeaseExpired:
		return "expired"
	case st.Lease == reconcile.LeaseNone && st.Declared:
		return "destroyed"
	case st.Phase == state.Failed:
		return "error"
	case st.Phase == state.Pending || st.Phase == state.Creating:
		return "creating"
	}
	return string(st.Phase)
}

// listResult is list_instances' answer, v1's shape.
type listResult struct {
	Instances []map[string]any `json:"instances" jsonschema:"One row per instance: instance_id, status, phase, expires_at, workspace_root, live_exists, reconciliation_drift, last_error …"`
	backendInfo
	ReconciliationError *coded.Error `json:"reconciliation_error,omitempty"`
}

type backendInfo struct {
	Backend   string       `json:"backend"`
	Available bool         `json:"backend_available"`
	Version   string       `json:"backend_version,omitempty"`
	Error     *coded.Error `json:"backend_error,omitempty"`
}

// backendInfo reports the server's backend as v1 did: the driver its
// default workspace's [vm] driver names (SANDBOX_BACKEND when set), whether
// it can run here, and its version; when it is unavailable, backend_error
// is the BACKEND_UNAVAILABLE envelope ({error_code, message, details})
// create_instance would fail with.
// listed are the workspaces the call resolved already, by root.
func (s *Server) backendInfo(listed map[string]*spec.Resolved) backendInfo {
	probe := &spec.Resolved{Root: s.cfg.DefaultRoot, Host: s.cfg.Host}
	name := s.cfg.Host.ResolveDriver(s.cfg.Settings.Backend)
	var r *spec.Resolved
	if s.cfg.DefaultRoot != "" { // "" is no folder: never where the server happens to run
		r = listed[s.cfg.DefaultRoot]
		if abs, _, err := spec.WorkspaceIdentity(s.cfg.DefaultRoot); err == nil && r == nil {
			r = listed[abs]
		}
		if ws, err := s.options(s.cfg.DefaultRoot, nil); err == nil && r == nil {
			r, _ = s.cfg.Engine.LoadShared(ws) // a broken spec leaves the server's own default
		}
	}
	if r != nil {
		probe, name = r, r.Host.ResolveDriver(r.Config.VM.Driver)
	}
	out := backendInfo{Backend: name, Available: true}
	drv, err := s.cfg.Engine.Drivers(name, probe)
	if err != nil {
		out.Available, out.Error = false, bounded(coded.Of(err, coded.BackendUnavailable))
		return out
	}
	if v, ok := drv.(interface{ Version() string }); ok {
		out.Version = v.Version()
	}
	return out
}

// workspaceProblem is one workspace list_instances could not reconcile.
type workspaceProblem struct {
	root string
	err  error
}

// reconciliationError is list_instances' reconciliation_error as v1 built
// it (BACKEND_COMMAND_FAILED, "Unable to reconcile with live backend
// state"), with each workspace that failed, and why, in the details.
func reconciliationError(problems []workspaceProblem) *coded.Error {
	errs := make([]map[string]any, len(problems))
	for i, p := range problems {
		te := asToolError(p.err)
		errs[i] = map[string]any{
			"workspace_root": p.root,
			"error_code":     te.Code,
			"message":        te.Message,
			"details":        te.Details,
		}
	}
	return bounded(newToolError(coded.BackendCommand, "Unable to reconcile with live backend state",
		map[string]any{"errors": errs}))
}
