package sim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/internal/atomicfile"
)

// A sim instance's disk is its guest folder, so a snapshot is a copy of
// that folder (snapshots/INSTANCE/NAME/guest, with meta.json beside it)
// and a clone is a new instance whose guest folder starts as a copy of
// the source's. Copies never follow a link: links are copied as links.

// snapshotDir holds an instance's snapshots.
func (d *Driver) snapshotDir(instance string) string {
	return filepath.Join(d.dir, "snapshots", instance)
}

type snapshotMeta struct {
	CreatedAt time.Time `json:"created_at"`
	SizeBytes int64     `json:"size_bytes"`
}

// Snapshot copies the instance's guest folder.
func (d *Driver) Snapshot(ctx context.Context, instance, name string) (drivers.SnapshotInfo, error) {
	if err := d.beginSnapshot(ctx, "snapshot", instance, name); err != nil {
		return drivers.SnapshotInfo{}, err
	}
	final := filepath.Join(d.snapshotDir(instance), name)
	if _, err := os.Stat(final); err == nil {
		return drivers.SnapshotInfo{}, d.end("snapshot", instance, fmt.Errorf("sim instance %s has a snapshot %s already",
			instance, name))
	}
	info, err := d.saveSnapshot(instance, name, final)
	return info, d.end("snapshot", instance, err)
}

func (d *Driver) saveSnapshot(instance, name, final string) (drivers.SnapshotInfo, error) {
	work, err := d.workDir()
	if err != nil {
		return drivers.SnapshotInfo{}, err
	}
	defer os.RemoveAll(work)
	size, err := copyGuest(d.guestDir(instance), filepath.Join(work, "guest"))
	if err != nil {
		return drivers.SnapshotInfo{}, fmt.Errorf("copying the guest folder of %s: %w", instance, err)
	}
	meta := snapshotMeta{CreatedAt: d.clock.Now().UTC(), SizeBytes: size}
	data, _ := json.Marshal(meta)
	if err := atomicfile.WriteFile(filepath.Join(work, "meta.json"), data, 0o644); err != nil {
		return drivers.SnapshotInfo{}, err
	}
	if err := os.MkdirAll(filepath.Dir(final), 0o755); err != nil {
		return drivers.SnapshotInfo{}, err
	}
	if err := os.Rename(work, final); err != nil {
		return drivers.SnapshotInfo{}, err
	}
	return drivers.SnapshotInfo{Name: name, CreatedAt: meta.CreatedAt, SizeBytes: size}, nil
}

// RestoreSnapshot puts a copy of the snapshot's folder in place of the
// guest folder, whole: a half-copied folder is never the guest's.
func (d *Driver) RestoreSnapshot(ctx context.Context, instance, name string) error {
	if err := d.beginSnapshot(ctx, "restore", instance, name); err != nil {
		return err
	}
	src, err := d.existingSnapshot(instance, name)
	if err == nil {
		err = d.replaceGuest(instance, src)
	}
	return d.end("restore", instance, err)
}

func (d *Driver) replaceGuest(instance, snapshot string) error {
	work, err := d.workDir()
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	if _, err := copyGuest(filepath.Join(snapshot, "guest"), filepath.Join(work, "guest")); err != nil {
		return fmt.Errorf("copying the snapshot of %s: %w", instance, err)
	}
	guest := d.guestDir(instance)
	if err := os.Rename(guest, filepath.Join(work, "old")); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(guest), 0o755); err != nil {
		return err
	}
	return os.Rename(filepath.Join(work, "guest"), guest)
}

// DeleteSnapshot removes one snapshot's folder.
func (d *Driver) DeleteSnapshot(ctx context.Context, instance, name string) error {
	if err := d.beginSnapshot(ctx, "delete-snapshot", instance, name); err != nil {
		return err
	}
	dir, err := d.existingSnapshot(instance, name)
	if err == nil {
		err = os.RemoveAll(dir)
	}
	return d.end("delete-snapshot", instance, err)
}

// ListSnapshots reads the instance's snapshot folders.
func (d *Driver) ListSnapshots(ctx context.Context, instance string) ([]drivers.SnapshotInfo, error) {
	if err := d.begin(ctx, "list-snapshots", instance); err != nil {
		return nil, err
	}
	if _, err := d.read(instance); err != nil {
		return nil, d.end("list-snapshots", instance, err)
	}
	entries, err := os.ReadDir(d.snapshotDir(instance))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, d.end("list-snapshots", instance, nil)
	} else if err != nil {
		return nil, d.end("list-snapshots", instance, err)
	}
	var out []drivers.SnapshotInfo
	for _, e := range entries {
		if !e.IsDir() || !drivers.ValidSnapshotName(e.Name()) {
			continue
		}
		info := drivers.SnapshotInfo{Name: e.Name()}
		var meta snapshotMeta
		if data, err := os.ReadFile(filepath.Join(d.snapshotDir(instance), e.Name(), "meta.json")); err == nil &&
			json.Unmarshal(data, &meta) == nil {
			info.CreatedAt, info.SizeBytes = meta.CreatedAt, meta.SizeBytes
		}
		out = append(out, info)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, d.end("list-snapshots", instance, nil)
}

// Clone makes dst, stopped, with a copy of source's guest folder (or of
// its snapshot's). The sim copies a running source as it is.
func (d *Driver) Clone(ctx context.Context, source drivers.Spec, snapshot string, dst drivers.Spec) error {
	if err := d.begin(ctx, "clone", dst.Name); err != nil {
		return err
	}
	return d.end("clone", dst.Name, d.clone(source.Name, snapshot, dst))
}

func (d *Driver) clone(source, snapshot string, dst drivers.Spec) error {
	if _, err := d.read(source); err != nil {
		return fmt.Errorf("cloning %s: %w", source, err)
	}
	if _, err := d.read(dst.Name); err == nil {
		return fmt.Errorf("sim instance %s already exists", dst.Name)
	}
	from := d.guestDir(source)
	if snapshot != "" {
		dir, err := d.existingSnapshot(source, snapshot)
		if err != nil {
			return err
		}
		from = filepath.Join(dir, "guest")
	}
	if err := d.clearLeftovers(dst.Name); err != nil {
		return err
	}
	if _, err := copyGuest(from, d.guestDir(dst.Name)); err != nil {
		return fmt.Errorf("copying the guest folder of %s: %w", source, err)
	}
	return d.write(record{Name: dst.Name, Status: drivers.Stopped, Spec: dst, CreatedAt: d.clock.Now().UTC()})
}

// beginSnapshot starts an operation on one snapshot of an existing
// instance. The name becomes a folder's, so it is checked here too.
func (d *Driver) beginSnapshot(ctx context.Context, op, instance, name string) error {
	if err := d.begin(ctx, op, instance); err != nil {
		return err
	}
	if err := drivers.CheckSnapshotName("name", name); err != nil {
		return d.end(op, instance, err)
	}
	if _, err := d.read(instance); err != nil {
		return d.end(op, instance, err)
	}
	return nil
}

// existingSnapshot is the folder of a snapshot the instance has.
func (d *Driver) existingSnapshot(instance, name string) (string, error) {
	dir := filepath.Join(d.snapshotDir(instance), name)
	if _, err := os.Stat(filepath.Join(dir, "meta.json")); err != nil {
		return "", fmt.Errorf("sim instance %s, snapshot %s: %w", instance, name, drivers.ErrSnapshotNotFound)
	}
	return dir, nil
}

// workDir is a fresh folder of the world's to build a copy in before it
// is renamed into place.
func (d *Driver) workDir() (string, error) {
	base := filepath.Join(d.dir, "snapshots")
	if err := os.MkdirAll(base, 0o755); err != nil {
		return "", err
	}
	return os.MkdirTemp(base, ".work-")
}

// copyGuest copies a guest folder (none: an empty one) to dst, which must
// not exist, and says how many bytes its files hold. Links are copied as
// links and never followed; what is neither file, folder nor link (a
// socket, a pipe) is left out.
func copyGuest(src, dst string) (int64, error) {
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return 0, err
	}
	if _, err := os.Lstat(src); errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	root, err := os.OpenRoot(dst)
	if err != nil {
		return 0, err
	}
	defer root.Close()
	var size int64
	err = filepath.WalkDir(src, func(p string, e fs.DirEntry, err error) error {
		if err != nil || p == src {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		n, err := copyEntry(root, p, rel, e)
		size += n
		return err
	})
	return size, err
}

func copyEntry(root *os.Root, p, rel string, e fs.DirEntry) (int64, error) {
	info, err := e.Info()
	if err != nil {
		return 0, err
	}
	switch {
	case e.IsDir():
		return 0, root.Mkdir(rel, info.Mode().Perm()|0o700)
	case e.Type()&fs.ModeSymlink != 0:
		target, err := os.Readlink(p)
		if err != nil {
			return 0, err
		}
		return 0, root.Symlink(target, rel)
	case !e.Type().IsRegular():
		return 0, nil
	}
	in, err := os.Open(p)
	if err != nil {
		return 0, err
	}
	defer in.Close()
	out, err := root.OpenFile(rel, os.O_WRONLY|os.O_CREATE|os.O_EXCL, info.Mode().Perm())
	if err != nil {
		return 0, err
	}
	n, err := out.ReadFrom(in)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return n, err
}
