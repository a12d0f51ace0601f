package snapshots

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/internal/coded"
	"github.com/sandboxforge/sbf/internal/hostpath"
	"github.com/sandboxforge/sbf/reconcile/plan"
	"github.com/sandboxforge/sbf/sandbox"
	"github.com/sandboxforge/sbf/state"
)

// A snapshot goes to and comes from a host file the door names, which is
// untrusted (an MCP client's): the copy tools' rules apply. It lies
// inside the operator's allowed host paths for the workspace, an export
// never overwrites anything nor lands on a protected path (hostpath.Guard:
// sbf's configuration and state, .git, [sync] protect), and an import
// reads only a regular file, never through a link. An exported file is
// the user's: sbf never deletes it, not even with its sandbox.

// porter is the target's backend as a mover of snapshots to host files.
func porter(tgt *sandbox.Target) (drivers.SnapshotPorter, error) {
	drv, err := tgt.Driver()
	if err != nil {
		return nil, err
	}
	p := drivers.CapabilitiesOf(drv).ExportSnapshots
	if p == nil {
		return nil, drivers.SnapshotUnsupported(tgt.DriverName, "exports and imports no snapshots in this build of sbf",
			"keep what matters outside the VM instead: sbf cp, collect_artifacts")
	}
	return p, nil
}

func (o Ops) export(
	ctx context.Context,
	tgt *sandbox.Target,
	have []drivers.SnapshotInfo,
	req Request,
) (*state.Snapshot, string, error) {
	i := slices.IndexFunc(have, func(s drivers.SnapshotInfo) bool { return s.Name == req.Name })
	if i < 0 {
		return nil, "", notFoundSnapshot(tgt, have, req.Name)
	}
	p, err := porter(tgt)
	if err != nil {
		return nil, "", err
	}
	w, err := o.HostPaths(tgt.Resolved.Root).Writer(tgt.Resolved.Root, req.Path,
		hostpath.Guard{Protect: tgt.Resolved.Config.Sync.Protect})
	if err != nil {
		return nil, "", err
	}
	defer w.Close()
	err = writeNew(w, req.Path, func(tmp string) error { return p.ExportSnapshot(ctx, tgt.Instance, req.Name, tmp) })
	return snapshotRecord(tgt, have[i]), w.Abs(), err
}

// writeNew has write fill a new file beside the destination (created
// exclusively, never through a link) and links it into place only if
// nothing is there: an export never replaces a file, even one that
// appeared meanwhile. What failed is removed.
func writeNew(w *hostpath.Writer, shown string, write func(abs string) error) error {
	root, rel := w.Root(), w.Rel()
	if _, err := root.Lstat(rel); !errors.Is(err, fs.ErrNotExist) {
		return exists(shown, err)
	}
	if err := root.MkdirAll(filepath.Dir(rel), 0o755); err != nil {
		return fmt.Errorf("making the folder of %s: %w", shown, err)
	}
	var b [6]byte
	rand.Read(b[:])
	tmp := filepath.Join(filepath.Dir(rel), "."+filepath.Base(rel)+".sbf-export-"+hex.EncodeToString(b[:]))
	f, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600) // a VM's disk may hold secrets
	if err != nil {
		return fmt.Errorf("creating the export beside %s: %w", shown, err)
	}
	f.Close()
	defer root.Remove(tmp)
	if err := write(filepath.Join(filepath.Dir(w.Abs()), filepath.Base(tmp))); err != nil {
		return err
	}
	if err := root.Link(tmp, rel); errors.Is(err, fs.ErrExist) {
		return exists(shown, nil)
	} else if err != nil { // a folder without hard links: rename, having looked first
		if _, lerr := root.Lstat(rel); !errors.Is(lerr, fs.ErrNotExist) {
			return exists(shown, lerr)
		}
		return root.Rename(tmp, rel)
	}
	return nil
}

func exists(shown string, err error) error {
	return coded.New(hostpath.Denied, map[string]any{"local_path": coded.Clip(shown), "reason": "exists"},
		"%s exists (or cannot be checked: %v); sbf never overwrites a file with an export, choose a new path",
		coded.Clip(shown), err)
}

func (o Ops) importFile(
	ctx context.Context,
	tgt *sandbox.Target,
	sn drivers.Snapshotter,
	have []drivers.SnapshotInfo,
	req Request,
) (*state.Snapshot, string, error) {
	if err := checkNewSnapshot(tgt, have, req.Name); err != nil {
		return nil, "", err
	}
	p, err := porter(tgt)
	if err != nil {
		return nil, "", err
	}
	src, err := o.importSource(tgt, req.Path)
	if err != nil {
		return nil, "", err
	}
	err = o.whileStopped(ctx, tgt, func() error { return p.ImportSnapshot(ctx, tgt.Instance, req.Name, src) })
	if err != nil {
		return nil, "", err
	}
	s := snapshotRecord(tgt, drivers.SnapshotInfo{Name: req.Name})
	if after, err := sn.ListSnapshots(ctx, tgt.Instance); err == nil {
		if i := slices.IndexFunc(after, func(a drivers.SnapshotInfo) bool { return a.Name == req.Name }); i >= 0 {
			s.SizeBytes = after[i].SizeBytes
		}
	}
	s.CreatedAt = o.Clock.Now().UTC() // when it became this sandbox's
	return s, src, o.updateState(ctx, tgt, func(f *state.File) { f.PutSnapshot(s) })
}

// importSource is the resolved path of the file to import: inside the
// allowed host paths, and a regular file that is not a link.
func (o Ops) importSource(tgt *sandbox.Target, path string) (string, error) {
	base := tgt.Resolved.Root
	abs := path
	if !filepath.IsAbs(abs) {
		abs = filepath.Join(base, path)
	}
	place, err := o.HostPaths(base).Confine(base, path) // first: nothing outside is looked at
	if err != nil {
		return "", err
	}
	defer place.Close()
	if info, err := os.Lstat(abs); err == nil && info.Mode()&fs.ModeSymlink != 0 {
		return "", coded.New(hostpath.Denied, map[string]any{"local_path": coded.Clip(path), "reason": "link"},
			"%s %v", coded.Clip(path), hostpath.ErrLink)
	}
	info, err := place.Root.Lstat(place.Rel)
	why := "not a regular file"
	if err != nil {
		why = err.Error()
	}
	if err != nil || !info.Mode().IsRegular() {
		return "", coded.New(coded.InvalidArguments, map[string]any{"local_path": coded.Clip(path)},
			"%s is not a file sbf can import (an exported snapshot): %s", coded.Clip(path), why)
	}
	return place.Abs, nil
}

// whileStopped runs op; when the backend answers drivers.ErrStopFirst the
// VM is stopped, op runs again, and the VM is started after with its
// declared spec, as a clone of a running Lima VM does.
func (o Ops) whileStopped(ctx context.Context, tgt *sandbox.Target, op func() error) error {
	err := op()
	if !errors.Is(err, drivers.ErrStopFirst) {
		return err
	}
	ds, ok := plan.DesiredFrom(tgt.Resolved).Sandboxes[tgt.Sandbox]
	drv, derr := tgt.Driver()
	if !ok || derr != nil {
		return errors.Join(err, derr)
	}
	vm := ds.VM
	vm.Name = tgt.Instance
	drivers.Progressf(ctx, "stopping %s (the backend changes its disk only while it is stopped)", tgt.Instance)
	if err := drv.Stop(ctx, tgt.Instance); err != nil {
		return fmt.Errorf("stopping %s: %w", tgt.Instance, err)
	}
	err = op()
	drivers.Progressf(ctx, "starting %s again", tgt.Instance)
	if serr := drv.Start(ctx, vm); serr != nil {
		err = errors.Join(err, fmt.Errorf("starting %s again: %w", tgt.Instance, serr))
	}
	return err
}
