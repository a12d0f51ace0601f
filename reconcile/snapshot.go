package reconcile

import (
	"context"

	"github.com/sandboxforge/sbf/reconcile/snapshots"
	"github.com/sandboxforge/sbf/spec"
)

// Snapshots are carried out by reconcile/snapshots; the doors know them by
// these names.
type (
	SnapshotOp      = snapshots.Op
	SnapshotRequest = snapshots.Request
	SnapshotResult  = snapshots.Result
)

const (
	SnapshotCreate  = snapshots.Create
	SnapshotRestore = snapshots.Restore
	SnapshotDelete  = snapshots.Delete
	SnapshotList    = snapshots.List
	SnapshotExport  = snapshots.Export
	SnapshotImport  = snapshots.Import
	// MaxSnapshots bounds how many snapshots one sandbox keeps.
	MaxSnapshots = snapshots.Max
)

// Snapshot carries out a snapshot operation on a live sandbox
// (snapshots.Ops.Do says what it decides), holding the sandbox's lock as
// the engine waits for locks.
func (e *Engine) Snapshot(ctx context.Context, ws spec.Options, req SnapshotRequest) (*SnapshotResult, error) {
	ops := snapshots.Ops{Targets: e, Locks: e.locks(), Clock: e.Clock, HostPaths: e.Policy.HostPaths}
	return ops.Do(ctx, ws, req)
}
