package mcpserver

import (
	"context"
	"time"

	"github.com/sandboxforge/sbf/reconcile"
	"github.com/sandboxforge/sbf/state"
)

// Snapshots and clones (issue 24): each tool renames its arguments into
// an engine request; the engine decides (names, leases, capability,
// limits) and records.

type snapshotArgs struct {
	InstanceID string `json:"instance_id"`
	Name       string `json:"name" jsonschema:"The snapshot's name: 1-64 letters, digits, '.', '-' and '_', starting with a letter or digit (each instance's own)."`
}

type portArgs struct {
	InstanceID string `json:"instance_id"`
	Name       string `json:"name" jsonschema:"The snapshot's name (export: one the instance has; import: a new one)."`
	LocalPath  string `json:"local_path" jsonschema:"Host file, inside the workspace (or another allowed folder); relative to the workspace. Export: a new file (never overwritten). Import: a file export_snapshot wrote."`
}

type listSnapshotsArgs struct {
	InstanceID string `json:"instance_id"`
}

type cloneArgs struct {
	InstanceID string  `json:"instance_id" jsonschema:"The instance to clone."`
	Name       *string `json:"name,omitempty" jsonschema:"The new sandbox's name (letters, digits, '-' and '_'). Give it as inst_LABEL (e.g. inst_c2) to make it the instance_id; any other name is kept as the sandbox name and instance_id is then the backend's instance name (as list_instances shows for declared sandboxes: sandbox names repeat across workspaces). Default: a new inst_ id."`
	Snapshot   *string `json:"snapshot,omitempty" jsonschema:"Copy this snapshot of the instance instead of its disk as it is now."`
	TTLMinutes *int    `json:"ttl_minutes,omitempty" jsonschema:"The new instance's lease in minutes; default: the source's lease length. At most [lease] max_ttl."`
}

// snapshotInfo is a snapshot as the snapshot tools answer it.
type snapshotInfo struct {
	InstanceID string  `json:"instance_id"`
	Name       string  `json:"name"`
	Backend    string  `json:"backend"`
	CreatedAt  *string `json:"created_at"`
	SizeBytes  *int64  `json:"size_bytes" jsonschema:"Bytes on disk when the backend says."`
}

type snapshotResult struct {
	snapshotInfo
	Status string `json:"status"`
}

type snapshotFileResult struct {
	snapshotResult
	LocalPath string `json:"local_path"`
}

type snapshotListResult struct {
	InstanceID string         `json:"instance_id"`
	Backend    string         `json:"backend"`
	Snapshots  []snapshotInfo `json:"snapshots"`
	Count      int            `json:"count"`
}

type cloneResult struct {
	summaryResult
	SourceInstanceID string `json:"source_instance_id" jsonschema:"The instance cloned."`
	Snapshot         string `json:"snapshot,omitempty" jsonschema:"The snapshot copied, when one was named."`
}

func (s *Server) snapshotOp(op reconcile.SnapshotOp) func(context.Context, snapshotArgs) (*snapshotResult, error) {
	return func(ctx context.Context, a snapshotArgs) (*snapshotResult, error) {
		e, ws, err := s.instance(ctx, a.InstanceID)
		if err != nil {
			return nil, err
		}
		res, err := s.cfg.Engine.Snapshot(ctx, ws, reconcile.SnapshotRequest{Op: op, Sandbox: e.Sandbox, Name: a.Name})
		if err != nil {
			return nil, v1Error(err, a.InstanceID)
		}
		return &snapshotResult{snapshotJSON(a.InstanceID, res.Snapshot), map[reconcile.SnapshotOp]string{
			reconcile.SnapshotCreate: "created", reconcile.SnapshotRestore: "restored",
			reconcile.SnapshotDelete: "deleted"}[op]}, nil
	}
}

func (s *Server) portOp(op reconcile.SnapshotOp) func(context.Context, portArgs) (*snapshotFileResult, error) {
	return func(ctx context.Context, a portArgs) (*snapshotFileResult, error) {
		e, ws, err := s.instance(ctx, a.InstanceID)
		if err != nil {
			return nil, err
		}
		res, err := s.cfg.Engine.Snapshot(ctx, ws, reconcile.SnapshotRequest{Op: op, Sandbox: e.Sandbox, Name: a.Name,
			Path: a.LocalPath})
		if err != nil {
			return nil, v1Error(err, a.InstanceID)
		}
		status := map[reconcile.SnapshotOp]string{reconcile.SnapshotExport: "exported",
			reconcile.SnapshotImport: "imported"}[op]
		return &snapshotFileResult{snapshotResult{snapshotJSON(a.InstanceID, res.Snapshot), status}, res.Path}, nil
	}
}

func (s *Server) listSnapshots(ctx context.Context, a listSnapshotsArgs) (*snapshotListResult, error) {
	e, ws, err := s.instance(ctx, a.InstanceID)
	if err != nil {
		return nil, err
	}
	res, err := s.cfg.Engine.Snapshot(ctx, ws, reconcile.SnapshotRequest{Op: reconcile.SnapshotList,
		Sandbox: e.Sandbox})
	if err != nil {
		return nil, v1Error(err, a.InstanceID)
	}
	list := []snapshotInfo{}
	for _, sn := range res.Snapshots {
		list = append(list, snapshotJSON(a.InstanceID, sn))
	}
	return &snapshotListResult{a.InstanceID, res.Driver, list, len(list)}, nil
}

func snapshotJSON(id string, sn *state.Snapshot) snapshotInfo {
	out := snapshotInfo{InstanceID: id, Name: sn.Name, Backend: sn.Driver, CreatedAt: isoPtr(&sn.CreatedAt)}
	if sn.SizeBytes > 0 {
		size := int64(sn.SizeBytes)
		out.SizeBytes = &size
	}
	return out
}

func (s *Server) cloneInstance(ctx context.Context, a cloneArgs) (*cloneResult, error) {
	e, ws, err := s.instance(ctx, a.InstanceID)
	if err != nil {
		return nil, err
	}
	req := reconcile.CloneRequest{Source: e.Sandbox, Name: newInstanceID(), Audit: audited("clone_instance")}
	if a.Name != nil {
		req.Name = *a.Name
	}
	if a.Snapshot != nil {
		req.Snapshot = *a.Snapshot
	}
	if a.TTLMinutes != nil {
		req.TTL = reconcile.TTL(time.Duration(*a.TTLMinutes) * time.Minute)
	}
	res, name, err := s.cfg.Engine.Clone(ctx, ws, req)
	if err != nil {
		return nil, v1Error(err, a.InstanceID)
	}
	s.touch(res.Resolved)
	out := &cloneResult{s.instanceSummary(res, name), a.InstanceID, req.Snapshot}
	out.InstanceID = s.idOf(res, name)
	return out, nil
}

// idOf is the id a sandbox of res goes by: the sandbox name made by
// create_instance or clone_instance (inst_…), else its backend name.
func (s *Server) idOf(res *reconcile.Result, sandbox string) string {
	return instanceID(state.IndexEntry{Sandbox: sandbox, Instance: res.InstanceOf(sandbox)})
}
