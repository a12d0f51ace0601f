package lima

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"github.com/sandboxforge/sbf/internal/clock"
	"os"
	"path/filepath"
	"strings"
)

// forkPending names, in a source's folder, the fork whose save is under
// way: written before the source is paused, removed once its disk has the
// name Lima opens again and it runs. Found later, it says sbf died in
// between (a laptop closed mid-fork), and repairFork finishes the job: a
// source left paused runs again, and no start finds diffdisk missing (Lima
// would make a new, empty one) or backing on itself.
const forkPending = "fork-pending"

// markFork records that f's save is under way.
func (f *forkImage) markFork(tag string) error {
	return os.WriteFile(filepath.Join(f.dir, forkPending), []byte(tag+"\n"), 0o600)
}

// forkOf is the fork a source's folder says is under way, nil when none.
func (d *Driver) forkOf(dir string) (*forkImage, error) {
	data, err := os.ReadFile(filepath.Join(dir, forkPending))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	tag := strings.TrimSpace(string(data))
	if _, herr := hex.DecodeString(tag); err != nil || herr != nil || tag == "" {
		return nil, fmt.Errorf("reading %s in %s: %w", forkPending, dir, errors.Join(err, herr))
	}
	return &forkImage{d: d, dir: dir, base: "fork-base-" + tag + ".qcow2", state: "fork-" + tag + ".state",
		overlay: "diffdisk.fork-" + tag}, nil
}

// repairFork finishes a fork of the instance in dir that sbf did not: with
// its QEMU running (paused mid-save, or running between the renames) it
// gives the disk its names and runs the VM; with none, it renames the
// files and names the base in diffdisk's header.
func (d *Driver) repairFork(ctx context.Context, dir string) error {
	f, err := d.forkOf(dir)
	if f == nil || err != nil {
		return err
	}
	if q, qerr := dialQMP(ctx, filepath.Join(dir, "qmp.sock")); qerr == nil {
		defer q.Close()
		err = f.repairRunning(ctx, q)
	} else {
		err = f.repairStopped(ctx)
	}
	if err != nil {
		return fmt.Errorf("finishing a fork of %s that sbf did not: %w (the disk files are in %s: diffdisk, %s, %s)",
			filepath.Base(dir), err, dir, f.base, f.overlay)
	}
	os.Remove(filepath.Join(dir, f.state))
	return os.Remove(filepath.Join(dir, forkPending))
}

func (f *forkImage) repairRunning(ctx context.Context, q *qmp) error {
	q.do(ctx, "migrate_cancel", nil, nil) // a save cut short; none running is fine
	disk, err := q.disk(ctx, "")
	if err != nil {
		return err
	}
	if filepath.Base(disk.Inserted.File) == f.overlay && f.has(f.overlay) {
		if err := f.rename(ctx, q, disk); err != nil {
			return err
		}
	} else if f.has(f.base) && !f.has(f.overlay) { // renamed: the header may still name the old diffdisk
		top, err := q.disk(ctx, disk.Device)
		if err != nil {
			return err
		}
		if err := q.do(ctx, "change-backing-file", map[string]any{"device": disk.Device,
			"image-node-name": top.Inserted.NodeName, "backing-file": f.base}, nil); err != nil {
			return err
		}
	}
	return runAgain(ctx, q)
}

// runAgain runs a source a save left standing, its migration cancelled:
// QEMU resumes one stopped at its switch-over by itself (it was running),
// one paused or done saving is continued.
func runAgain(ctx context.Context, q *qmp) error {
	var st string
	var err error
	for range 100 {
		switch st, err = q.status(ctx); {
		case err != nil:
			return err
		case st == "running":
			return nil
		case st == "paused" || st == "postmigrate":
			return q.do(ctx, "cont", nil, nil)
		}
		if err := clock.Sleep(ctx, clock.Real{}, migratePoll); err != nil {
			return err
		}
	}
	return fmt.Errorf("the source stays %s after its save was cut short", st)
}

func (f *forkImage) repairStopped(ctx context.Context) error {
	diff := filepath.Join(f.dir, "diffdisk")
	if f.has(f.overlay) {
		if f.has("diffdisk") && f.has(f.base) {
			return errors.New("diffdisk, the frozen base and the overlay all exist: which is current is unknown")
		}
		if f.has("diffdisk") {
			if err := os.Rename(diff, filepath.Join(f.dir, f.base)); err != nil {
				return err
			}
		}
		if err := os.Rename(filepath.Join(f.dir, f.overlay), diff); err != nil {
			return err
		}
	}
	if !f.has(f.base) {
		return nil // paused, then gone before the disk was frozen: nothing moved
	}
	img, err := f.d.findQemuImg()
	if err != nil {
		return err
	}
	_, err = img.run(ctx, "rebase", "-u", "-f", "qcow2", "-F", "qcow2", "-b", f.base, diff)
	return err
}

func (f *forkImage) has(name string) bool {
	_, err := os.Lstat(filepath.Join(f.dir, name))
	return err == nil
}
