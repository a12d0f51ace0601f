// Package snapshots carries out a door's snapshot operations on a live
// sandbox (take, restore, delete, list, export to and import from a host
// file) and decides whether a sandbox may be cloned. The engine hands it
// what it needs (Ops, CloneChecks); it never reaches the engine.
package snapshots

import (
	"context"
	"errors"
	"path/filepath"
	"slices"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/internal/clock"
	"github.com/sandboxforge/sbf/internal/coded"
	"github.com/sandboxforge/sbf/internal/hostpath"
	"github.com/sandboxforge/sbf/reconcile/admission"
	"github.com/sandboxforge/sbf/sandbox"
	"github.com/sandboxforge/sbf/spec"
	"github.com/sandboxforge/sbf/state"
)

// Max bounds how many snapshots one sandbox keeps: each holds disk (and
// memory) of the host's, and an agent asks for them.
const Max = 16

// Op is what a snapshot request does.
type Op string

const (
	Create  Op = "create"
	Restore Op = "restore"
	Delete  Op = "delete"
	List    Op = "list"
	// Export writes a snapshot into a new host file (Path); Import makes a
	// host file, an export, a new snapshot.
	Export Op = "export"
	Import Op = "import"
)

// Request is a door's snapshot operation on one sandbox.
type Request struct {
	Op      Op
	Sandbox string
	Name    string // the snapshot; not for list
	// Path is the host file of an export or import, untrusted: relative
	// to the workspace, and only inside its allowed host paths.
	Path string
}

// Result is what a snapshot operation did: the snapshot it created,
// restored or deleted, or (list) every one the sandbox has.
type Result struct {
	Sandbox   string
	Instance  string
	Driver    string
	Snapshot  *state.Snapshot
	Snapshots []*state.Snapshot
	Path      string // the host file exported to or imported from, resolved
}

// Targets finds the sandbox a request names: one that holds a live lease,
// with its backend (the engine's Target).
type Targets interface {
	Target(ws spec.Options, name string) (*sandbox.Target, error)
}

// Ops carries snapshot operations out with what the engine hands it.
type Ops struct {
	Targets Targets
	// Locks takes the sandbox's lock, and the state file's as long as the
	// engine waits for it.
	Locks admission.Locks
	Clock clock.Clock
	// HostPaths are the operator's host paths for a workspace: where an
	// export may be written and an import read.
	HostPaths func(workspace string) hostpath.Policy
}

// Do carries out a snapshot operation. It decides what a door never
// does: the name is one a snapshot may have, the sandbox holds
// a live lease, its backend keeps snapshots (SNAPSHOT_UNSUPPORTED
// otherwise), a name is taken once (SNAPSHOT_EXISTS) and within
// Max (SNAPSHOT_LIMIT_EXCEEDED), and the snapshot exists
// (SNAPSHOT_NOT_FOUND). The sandbox's lock is held throughout, so no run
// changes its VM meanwhile; what was taken (or imported) is recorded in
// the state file and forgotten with the sandbox's VM. Export and import
// move a snapshot to and from a host file under the copy tools' host path
// rules (port.go).
func (o Ops) Do(ctx context.Context, ws spec.Options, req Request) (*Result, error) {
	if req.Op != List {
		if err := drivers.CheckSnapshotName("name", req.Name); err != nil {
			return nil, err
		}
	}
	root, _, err := ws.Identity()
	if err != nil {
		return nil, err
	}
	if req.Op != List {
		locks, err := o.Locks.Sandboxes(ctx, filepath.Join(root, spec.Dir), []string{req.Sandbox}, admission.WaitBusy)
		if err != nil {
			return nil, err
		}
		defer locks.Release()
	}
	tgt, sn, err := o.target(ws, req.Sandbox)
	if err != nil {
		return nil, err
	}
	have, err := sn.ListSnapshots(ctx, tgt.Instance)
	if err != nil {
		return nil, err
	}
	res := &Result{Sandbox: tgt.Sandbox, Instance: tgt.Instance, Driver: tgt.DriverName}
	switch req.Op {
	case List:
		res.Snapshots, err = listed(tgt, have)
	case Create:
		res.Snapshot, err = o.take(ctx, tgt, sn, have, req.Name)
	case Restore, Delete:
		res.Snapshot, err = o.change(ctx, tgt, sn, have, req)
	case Export:
		res.Snapshot, res.Path, err = o.export(ctx, tgt, have, req)
	case Import:
		res.Snapshot, res.Path, err = o.importFile(ctx, tgt, sn, have, req)
	default:
		err = coded.New(coded.InvalidArguments, map[string]any{"op": string(req.Op)}, "unknown snapshot operation %q",
			req.Op)
	}
	if err != nil {
		return nil, err
	}
	return res, nil
}

// target finds a live sandbox whose backend keeps snapshots.
func (o Ops) target(ws spec.Options, name string) (*sandbox.Target, drivers.Snapshotter, error) {
	tgt, err := o.Targets.Target(ws, name)
	if err != nil {
		return nil, nil, err
	}
	drv, err := tgt.Driver()
	if err != nil {
		return nil, nil, err
	}
	sn := drivers.CapabilitiesOf(drv).Snapshots
	if sn == nil {
		return nil, nil, drivers.NoSnapshots(tgt.DriverName)
	}
	return tgt, sn, nil
}

// listed is what the backend has, with what the state file recorded of
// each (when it was taken, by which driver); the backend's word decides
// which exist.
func listed(tgt *sandbox.Target, have []drivers.SnapshotInfo) ([]*state.Snapshot, error) {
	rec, err := state.Read(filepath.Join(tgt.Resolved.Root, spec.Dir), tgt.Resolved.Root, tgt.Resolved.WorkspaceID)
	if err != nil {
		return nil, err
	}
	out := []*state.Snapshot{}
	for _, info := range have {
		s := snapshotRecord(tgt, info)
		if r := rec.FindSnapshot(tgt.Sandbox, info.Name); r != nil && r.Instance == tgt.Instance {
			s.CreatedAt = r.CreatedAt
			if s.SizeBytes == 0 {
				s.SizeBytes = r.SizeBytes
			}
		}
		out = append(out, s)
	}
	return out, nil
}

func snapshotRecord(tgt *sandbox.Target, info drivers.SnapshotInfo) *state.Snapshot {
	return &state.Snapshot{Sandbox: tgt.Sandbox, Instance: tgt.Instance, Name: info.Name, Driver: tgt.DriverName,
		CreatedAt: info.CreatedAt, SizeBytes: info.SizeBytes}
}

func (o Ops) take(
	ctx context.Context,
	tgt *sandbox.Target,
	sn drivers.Snapshotter,
	have []drivers.SnapshotInfo,
	name string,
) (*state.Snapshot, error) {
	if err := checkNewSnapshot(tgt, have, name); err != nil {
		return nil, err
	}
	info, err := sn.Snapshot(ctx, tgt.Instance, name)
	if err != nil {
		return nil, err
	}
	s := snapshotRecord(tgt, info)
	if s.CreatedAt.IsZero() {
		s.CreatedAt = o.Clock.Now().UTC()
	}
	return s, o.updateState(ctx, tgt, func(f *state.File) { f.PutSnapshot(s) })
}

// checkNewSnapshot refuses a name taken, or one snapshot too many.
func checkNewSnapshot(tgt *sandbox.Target, have []drivers.SnapshotInfo, name string) error {
	details := map[string]any{"sandbox": tgt.Sandbox, "name": name, "snapshots": names(have)}
	if slices.ContainsFunc(have, func(s drivers.SnapshotInfo) bool { return s.Name == name }) {
		return coded.New(coded.SnapshotExists, details,
			"sandbox %s has a snapshot %s already; delete it first or choose another name", tgt.Sandbox, name)
	}
	if len(have) >= Max {
		details["max_snapshots"] = Max
		return coded.New(coded.SnapshotLimit, details,
			"sandbox %s keeps %d snapshots, the most a sandbox may; delete one first", tgt.Sandbox, len(have))
	}
	return nil
}

func notFoundSnapshot(tgt *sandbox.Target, have []drivers.SnapshotInfo, name string) error {
	return coded.New(coded.SnapshotNotFound, map[string]any{"sandbox": tgt.Sandbox, "name": name,
		"snapshots": names(have)}, "sandbox %s has no snapshot %s (it has: %v)", tgt.Sandbox, name, names(have))
}

func (o Ops) change(
	ctx context.Context,
	tgt *sandbox.Target,
	sn drivers.Snapshotter,
	have []drivers.SnapshotInfo,
	req Request,
) (*state.Snapshot, error) {
	i := slices.IndexFunc(have, func(s drivers.SnapshotInfo) bool { return s.Name == req.Name })
	if i < 0 {
		return nil, notFoundSnapshot(tgt, have, req.Name)
	}
	s := snapshotRecord(tgt, have[i])
	if req.Op == Restore {
		return s, o.whileStopped(ctx, tgt, func() error { return sn.RestoreSnapshot(ctx, tgt.Instance, req.Name) })
	}
	err := sn.DeleteSnapshot(ctx, tgt.Instance, req.Name)
	if err != nil && !errors.Is(err, drivers.ErrSnapshotNotFound) {
		return nil, err
	}
	return s, o.updateState(ctx, tgt, func(f *state.File) { f.DropSnapshot(tgt.Sandbox, req.Name) })
}

// updateState changes the target's workspace's state file under its lock.
func (o Ops) updateState(ctx context.Context, tgt *sandbox.Target, change func(*state.File)) error {
	r := tgt.Resolved
	store, err := state.Open(ctx, filepath.Join(r.Root, spec.Dir), r.Root, r.WorkspaceID, o.Locks.Who, o.Locks.Timeout)
	if err != nil {
		return err
	}
	defer store.Close()
	return store.Write(func(tx *state.Tx) { tx.Snapshots(change) })
}

func names(list []drivers.SnapshotInfo) []string {
	out := []string{}
	for _, s := range list {
		out = append(out, s.Name)
	}
	return out
}
