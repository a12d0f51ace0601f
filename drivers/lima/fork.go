package lima

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/internal/clock"
	"github.com/sandboxforge/sbf/internal/coded"
	"github.com/sandboxforge/sbf/internal/shellquote"
)

// A fork of a Lima QEMU VM (docs/drivers.md, Fork): the source is paused
// over QMP, its disk frozen into a read-only base (blockdev-snapshot-sync:
// it writes on into a new overlay, which takes the name Lima opens), its
// memory saved to a file, and resumed. A child is a Lima instance made from
// the child's spec whose diffdisk is a qcow2 overlay of that base; the
// QEMU wrapper starts it with -incoming from the saved memory (the file
// fork-incoming in its folder), and it is resumed once the memory is in.
//
// Backing files are named relative to the image (the base's "basedisk",
// an overlay's base), and every file of the chain is hard-linked into each
// instance's folder: deleting any instance (limactl delete removes its
// folder) leaves the others' chains whole, and no instance writes a file
// another reads.

// forkIncoming is the saved memory a child's QEMU starts from, removed
// once it is in: a later restart boots.
const forkIncoming = "fork-incoming"

// forkRestored marks a child whose memory is in and whose guest runs: it
// is not booting, whatever Lima's own checks (which `limactl start` goes
// on making) say. The next start removes it.
const forkRestored = "fork-restored"

// migratePoll is how often a save's progress is asked for.
const migratePoll = 50 * time.Millisecond

// SaveForFork pauses the running instance, freezes its disk, saves its
// memory and resumes it (drivers.Forker).
func (d *Driver) SaveForFork(ctx context.Context, source drivers.Spec) (drivers.ForkImage, error) {
	if source.VMType != "" && source.VMType != "qemu" {
		return nil, drivers.ForkUnsupported("lima", "forks only QEMU VMs (this one runs on "+source.VMType+")",
			fmt.Sprintf("clone it instead: sbf clone %s (its processes start again from a boot)", source.Name))
	}
	var id [6]byte
	if _, err := rand.Read(id[:]); err != nil {
		return nil, fmt.Errorf("naming the fork of %s: %w", source.Name, err)
	}
	tag := hex.EncodeToString(id[:])
	f := &forkImage{d: d, dir: d.instanceDir(source.Name), base: "fork-base-" + tag + ".qcow2",
		state: "fork-" + tag + ".state", overlay: "diffdisk.fork-" + tag}
	if err := d.repairFork(ctx, f.dir); err != nil {
		return nil, err
	}
	q, err := dialQMP(ctx, filepath.Join(f.dir, "qmp.sock"))
	if err != nil {
		return nil, fmt.Errorf("forking %s: %w", source.Name, err)
	}
	defer q.Close()
	disk, err := q.disk(ctx, "")
	if err != nil {
		return nil, fmt.Errorf("forking %s: %w", source.Name, err)
	}
	if strings.Contains(disk.Inserted.File, "diffdisk.fork-") {
		// QEMU 7.2 fails a second save of a VM it saved and resumed
		// ("bdrv_inactivate_all() failed"): refused before it is paused.
		return nil, drivers.ForkUnsupported("lima", "forks a QEMU VM once per start (QEMU cannot save its disks "+
			"again after a save it resumed from)", "fork one of its children instead, each forkable once: sbf fork "+
			source.Name+"-fork-1", "or restart it: sbf clone "+source.Name+" stops it for the copy and starts it "+
			"again, and both can then be forked")
	}
	// The children's guests are copies of the source's: settings it has
	// need not be given again (takeIdentity).
	f.guestEgress, _ = os.ReadFile(d.guestEgressMarker(source.Name))
	if err := f.markFork(tag); err != nil {
		return nil, fmt.Errorf("forking %s: %w", source.Name, err)
	}
	froze, saveErr := f.save(ctx, q, disk)
	// The source runs on whatever the save did, even when the fork was cancelled.
	life := context.WithoutCancel(ctx)
	saveErr = errors.Join(saveErr, q.do(life, "cont", nil, nil))
	if !f.pausedAt.IsZero() {
		f.paused = clock.Real{}.Now().Sub(f.pausedAt)
	}
	var renameErr error
	if froze {
		renameErr = f.rename(life, q, disk)
	}
	if renameErr == nil { // otherwise the next fork or start finishes the renames (repairFork)
		os.Remove(filepath.Join(f.dir, forkPending))
	}
	if saveErr = errors.Join(saveErr, renameErr); saveErr != nil {
		os.Remove(filepath.Join(f.dir, f.state))
		return nil, fmt.Errorf("forking %s: %w", source.Name, saveErr)
	}
	return f, nil
}

// forkImage is one saved source: its folder, its frozen base and memory,
// and when (and how long) the save paused it.
type forkImage struct {
	d                         *Driver
	dir, base, state, overlay string
	pausedAt                  time.Time
	paused                    time.Duration
	guestEgress               []byte // the source's egress marker (guestEgressDone) as the save began
}

// Paused is how long the source stood still for the save (drivers.PauseReporter).
func (f *forkImage) Paused() time.Duration { return f.paused }

// save writes the running source's memory to f.state as a live migration
// (the guest runs while most of it is copied) that stops before its
// switch-over: with the VM paused and its disk still writable, the disk
// is frozen, then the migration ends. froze says whether the disk now
// writes to the new overlay (which rename must then name diffdisk,
// whatever else failed).
func (f *forkImage) save(ctx context.Context, q *qmp, disk qmpBlock) (froze bool, err error) {
	caps := []map[string]any{{"capability": "pause-before-switchover", "state": true}}
	if err := q.do(ctx, "migrate-set-capabilities", map[string]any{"capabilities": caps}, nil); err != nil {
		return false, err
	}
	// Unbounded bandwidth, and a switch-over allowed once a second's worth
	// is left: a guest emulated in software dirties memory slowly anyway.
	params := map[string]any{"max-bandwidth": int64(8) << 30, "downtime-limit": 1000}
	if err := q.do(ctx, "migrate-set-parameters", params, nil); err != nil {
		return false, err
	}
	uri := "exec:cat > " + shellquote.Quote(filepath.Join(f.dir, f.state))
	if err := q.do(ctx, "migrate", map[string]any{"uri": uri}, nil); err != nil {
		return false, fmt.Errorf("saving the memory: %w", err)
	}
	for {
		var m struct {
			Status string `json:"status"`
			Error  string `json:"error-desc"`
		}
		if err := q.do(ctx, "query-migrate", nil, &m); err != nil {
			return true, err
		}
		switch m.Status {
		case "pre-switchover":
			if froze {
				break
			}
			f.pausedAt = clock.Real{}.Now()
			if err := f.freeze(ctx, q, disk); err != nil {
				q.do(context.WithoutCancel(ctx), "migrate_cancel", nil, nil)
				return false, err
			}
			froze = true
			if err := q.do(ctx, "migrate-continue", map[string]any{"state": "pre-switchover"}, nil); err != nil {
				q.do(context.WithoutCancel(ctx), "migrate_cancel", nil, nil)
				return true, fmt.Errorf("saving the memory: %w", err)
			}
		case "completed":
			return froze, errors.Join(frozeOrNot(froze), f.relativeBacking(ctx))
		case "failed", "cancelled":
			return froze, fmt.Errorf("saving the memory: %s %s", m.Status, m.Error)
		}
		if err := clock.Sleep(ctx, clock.Real{}, migratePoll); err != nil {
			q.do(context.WithoutCancel(ctx), "migrate_cancel", nil, nil)
			return froze, err
		}
	}
}

// frozeOrNot is the error of a migration that completed without the
// pause it was asked for (the saved memory would not match the disk).
func frozeOrNot(froze bool) error {
	if froze {
		return nil
	}
	return errors.New("saving the memory: QEMU switched over without pausing first")
}

// freeze makes the paused source's disk read-only as it is now: the
// source writes on into a new overlay.
func (f *forkImage) freeze(ctx context.Context, q *qmp, disk qmpBlock) error {
	// A name no file and no node of QEMU's had: QEMU keeps the names it opened
	// (a later fork's diffdisk is, to QEMU, the overlay an earlier one made),
	// and an overlay created at such a name would be its own backing file.
	overlay := filepath.Join(f.dir, f.overlay)
	if err := q.do(ctx, "blockdev-snapshot-sync", map[string]any{"device": disk.Device,
		"snapshot-file": overlay, "format": "qcow2"}, nil); err != nil {
		return fmt.Errorf("freezing the disk: %w", err)
	}
	return nil
}

// relativeBacking makes the frozen disk name what it backs on relative to
// its folder (Lima names basedisk by its absolute path), so that the chain
// linked into a child's folder is whole there. It runs while the source's
// images are inactive (a completed migration released their locks; cont
// reads the header again): QEMU's change-backing-file would record the
// wrong backing format for a raw basedisk.
func (f *forkImage) relativeBacking(ctx context.Context) error {
	img, err := f.d.findQemuImg()
	if err != nil {
		return err
	}
	frozen := filepath.Join(f.dir, "diffdisk")
	info, err := img.info(ctx, frozen)
	if err != nil || info.BackingFile == "" {
		return err
	}
	_, err = img.run(ctx, "rebase", "-u", "-f", "qcow2", "-F", info.BackingFormat, "-b",
		filepath.Base(info.BackingFile), frozen)
	return err
}

// rename gives the frozen disk its base name and the overlay the source
// writes to the name Lima opens, which names the base relative to its folder.
func (f *forkImage) rename(ctx context.Context, q *qmp, disk qmpBlock) error {
	diff := filepath.Join(f.dir, "diffdisk")
	if err := os.Rename(diff, filepath.Join(f.dir, f.base)); err != nil {
		return err
	}
	if err := os.Rename(filepath.Join(f.dir, f.overlay), diff); err != nil {
		return err
	}
	top, err := q.disk(ctx, disk.Device)
	if err != nil {
		return err
	}
	return q.do(ctx, "change-backing-file", map[string]any{"device": disk.Device,
		"image-node-name": top.Inserted.NodeName, "backing-file": f.base}, nil)
}

// StartChild makes the child's instance over the frozen base, starts its
// QEMU from the saved memory, resumes it and gives it its own identity.
func (f *forkImage) StartChild(ctx context.Context, child drivers.ForkChild) error {
	d, name, began := f.d, child.Spec.Name, clock.Real{}.Now()
	if err := d.createOver(ctx, child.Spec); err != nil {
		return err
	}
	cdir := d.instanceDir(name)
	if err := f.childDisk(ctx, cdir); err != nil {
		return fmt.Errorf("making fork child %s's disk: %w", name, err)
	}
	if err := os.Link(filepath.Join(f.dir, f.state), filepath.Join(cdir, forkIncoming)); err != nil {
		return fmt.Errorf("making fork child %s: %w", name, err)
	}
	drivers.Progressf(ctx, "instance made after %s; starting it from the saved memory", since(began))
	// limactl start runs on after the child is handed over (its checks of a
	// guest that needs no boot take most of a minute under emulation): it
	// is not cancelled with the fork, whose undo deletes the child, and
	// what it says once the child is handed over reaches nobody.
	var handedOver atomic.Bool
	startCtx := drivers.WithProgress(context.WithoutCancel(ctx), func(msg string) {
		if !handedOver.Load() {
			drivers.Progressf(ctx, "%s", msg)
		}
	})
	started := make(chan error, 1)
	go func() { started <- d.limactlStart(startCtx, child.Spec) }()
	if err := f.resume(ctx, cdir, started); err != nil {
		return fmt.Errorf("starting fork child %s: %w", name, err)
	}
	drivers.Progressf(ctx, "running from the saved memory after %s", since(began))
	if err := os.WriteFile(filepath.Join(cdir, forkRestored), nil, 0o600); err != nil {
		return fmt.Errorf("starting fork child %s: %w", name, err)
	}
	// Its guest answers SSH seconds after it runs: Connect waits for that
	// (a command's dial gives up sooner); takeIdentity says a failure.
	if err := d.Pool.Connect(ctx, name); err == nil {
		drivers.Progressf(ctx, "connected over SSH after %s", since(began))
	}
	if err := f.takeIdentity(ctx, child); err != nil {
		return err
	}
	drivers.Progressf(ctx, "answering with its own identity after %s", since(began))
	handedOver.Store(true)
	return nil
}

// since is the time from began to now, as progress says it.
func since(began time.Time) time.Duration {
	return clock.Real{}.Now().Sub(began).Round(10 * time.Millisecond)
}

// childDisk links the source's chain (and boot files) into the child's folder cdir, in place
// of what limactl create made there, and
// makes the child's diffdisk an overlay of the frozen base.
func (f *forkImage) childDisk(ctx context.Context, cdir string) error {
	bases, err := filepath.Glob(filepath.Join(f.dir, "fork-base-*.qcow2")) // an earlier fork's are in the chain
	if err != nil {
		return err
	}
	for _, file := range append([]string{"basedisk", "kernel", "kernel.cmdline", "initrd"}, bases...) {
		file = filepath.Base(file)
		if _, err := os.Stat(filepath.Join(f.dir, file)); errors.Is(err, os.ErrNotExist) {
			continue
		}
		os.Remove(filepath.Join(cdir, file)) // createOver's empty placeholder: the source's is the one
		if err := os.Link(filepath.Join(f.dir, file), filepath.Join(cdir, file)); err != nil {
			return err
		}
	}
	os.Remove(filepath.Join(cdir, "diffdisk"))
	img, err := f.d.findQemuImg()
	if err != nil {
		return err
	}
	_, err = img.run(ctx, "create", "-q", "-f", "qcow2", "-F", "qcow2", "-b", f.base, filepath.Join(cdir, "diffdisk"))
	return err
}

// resume waits until the child's QEMU has read the saved memory and runs
// it: QEMU runs a child at once when its source was running as the save
// began (a live save), and leaves it paused when the source was paused.
// Lima's start waits for the guest meanwhile; a start that ends first ends
// the wait.
func (f *forkImage) resume(ctx context.Context, cdir string, started chan error) error {
	defer os.Remove(filepath.Join(cdir, forkIncoming))
	for {
		if q, err := dialQMP(ctx, filepath.Join(cdir, "qmp.sock")); err == nil {
			st, err := q.status(ctx)
			if err == nil && (st == "paused" || st == "running") {
				if st == "paused" {
					err = q.do(ctx, "cont", nil, nil)
				}
				q.Close()
				return err
			}
			q.Close()
		}
		select {
		case err := <-started:
			started <- err // for StartChild
			if err == nil {
				err = errors.New("limactl start ended before the memory was restored")
			}
			return err
		case <-ctx.Done():
			return ctx.Err()
		case <-clock.Real{}.After(migratePoll * 4):
		}
	}
}

// takeIdentity gives the child its hostname, machine id, random seed and
// clock, and the egress settings a start gives a guest, in one script over
// its own new connection (each command is a sudo, seconds under emulation),
// which is then dropped: the next login reads the new hostname and the
// guest's environment.
func (f *forkImage) takeIdentity(ctx context.Context, child drivers.ForkChild) error {
	d, s, id := f.d, child.Spec, child.Identity
	id.Now = d.opts.Clock.Now() // the child's memory came in seconds after the identity was drawn
	script, egress, settings := id.GuestScript(), d.guestEgressWanted(s), guestEgressScript(s.Egress)
	if egress && string(f.guestEgress) == settings {
		// The source's guest had these settings, so its copy has them:
		// recorded, not run again (several execs, seconds in a guest that
		// has just come up under emulation).
		d.guestEgressDone(ctx, s, nil)
		egress = false
	}
	if egress {
		script = childScript(script, settings)
	}
	// A session of its own (a stdin makes one): a guest shell started for
	// one command would go with the connection.
	res, err := d.Exec(ctx, s.Name, drivers.ExecRequest{Command: "sudo -n sh -c " + shellquote.Quote(script),
		Stdin: strings.NewReader("")})
	if egress {
		d.environmentChanged(s.Name)
	} else {
		d.dropConn(s.Name)
	}
	if err == nil && res.ExitCode != 0 {
		err = fmt.Errorf("exit %d%s", res.ExitCode, coded.Said(res.Stderr))
	}
	if err != nil {
		return fmt.Errorf("giving fork child %s its own identity: %w", s.Name, err)
	}
	if egress {
		var egressErr error
		if _, said, failed := strings.Cut(string(res.Stderr), egressFailed); failed {
			egressErr = fmt.Errorf("exit%s", strings.TrimSpace(said))
		}
		d.guestEgressDone(ctx, s, egressErr)
	}
	return nil
}

// childScript runs identity, then egress in a subshell of its own whose
// failure is said on stderr and is a warning (the policy holds outside the
// guest), not the fork's failure.
func childScript(identity, egress string) string {
	return identity + "set +e\n(\n" + egress + ")\nstatus=$?\n" +
		"[ $status -eq 0 ] || echo \"" + egressFailed + " $status\" >&2\nexit 0\n"
}

// egressFailed begins the line a child's script writes when its egress
// settings failed.
const egressFailed = "sbf-egress-settings-failed:"

// Release removes the saved memory; the frozen base stays while a disk
// chain names it.
func (f *forkImage) Release(context.Context) error {
	if err := os.Remove(filepath.Join(f.dir, f.state)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("removing a fork's saved memory: %w", err)
	}
	return nil
}
