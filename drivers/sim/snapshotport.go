package sim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/drivers/sshexec"
	"github.com/sandboxforge/sbf/internal/atomicfile"
	"github.com/sandboxforge/sbf/internal/hostpath"
)

// An exported sim snapshot is a tar of its guest folder whose top entry
// is "guest": links are archived as links, never followed, and an import
// unpacks only below "guest" (no absolute names, no "..").

const exportTop = "guest"

// ExportSnapshot writes the snapshot's guest folder as a tar into dst.
func (d *Driver) ExportSnapshot(ctx context.Context, instance, name, dst string) error {
	if err := d.beginSnapshot(ctx, "export-snapshot", instance, name); err != nil {
		return err
	}
	dir, err := d.existingSnapshot(instance, name)
	if err == nil {
		err = writeExport(filepath.Join(dir, "guest"), dst)
	}
	return d.end("export-snapshot", instance, err)
}

func writeExport(guest, dst string) error {
	if err := os.MkdirAll(guest, 0o755); err != nil { // an empty guest folder is not kept
		return err
	}
	root, err := os.OpenRoot(guest)
	if err != nil {
		return err
	}
	defer root.Close()
	f, err := os.OpenFile(dst, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return fmt.Errorf("opening the export file: %w", err)
	}
	err = sshexec.WriteTarRoot(f, root, ".", exportTop)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("writing the export %s: %w", dst, err)
	}
	return nil
}

// ImportSnapshot unpacks an export into a new snapshot of the instance;
// its guest folder is not touched.
func (d *Driver) ImportSnapshot(ctx context.Context, instance, name, src string) error {
	if err := d.beginSnapshot(ctx, "import-snapshot", instance, name); err != nil {
		return err
	}
	final := filepath.Join(d.snapshotDir(instance), name)
	if _, err := os.Lstat(final); err == nil {
		return d.end("import-snapshot", instance, fmt.Errorf("sim instance %s has a snapshot %s already",
			instance, name))
	}
	return d.end("import-snapshot", instance, d.importSnapshot(src, final))
}

func (d *Driver) importSnapshot(src, final string) error {
	in, err := os.Open(src)
	if err != nil {
		return fmt.Errorf("opening the export: %w", err)
	}
	defer in.Close()
	work, err := d.workDir()
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	root, err := os.OpenRoot(work)
	if err != nil {
		return err
	}
	defer root.Close()
	if err := root.Mkdir("guest", 0o755); err != nil {
		return err
	}
	if _, err := hostpath.Unpack(in, root, exportTop, "guest", hostpath.UnpackOptions{}); err != nil {
		return fmt.Errorf("unpacking the export %s: %w", src, err)
	}
	size, err := filesSize(filepath.Join(work, "guest"))
	if err != nil {
		return err
	}
	data, _ := json.Marshal(snapshotMeta{CreatedAt: d.clock.Now().UTC(), SizeBytes: size})
	if err := atomicfile.WriteFile(filepath.Join(work, "meta.json"), data, 0o644); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(final), 0o755); err != nil {
		return err
	}
	return os.Rename(work, final)
}

// filesSize is how many bytes the regular files below dir hold.
func filesSize(dir string) (int64, error) {
	var size int64
	err := filepath.WalkDir(dir, func(_ string, e fs.DirEntry, err error) error {
		if err != nil || !e.Type().IsRegular() {
			return err
		}
		info, err := e.Info()
		if err == nil {
			size += info.Size()
		}
		return err
	})
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	return size, err
}

var _ drivers.SnapshotPorter = (*Driver)(nil)
