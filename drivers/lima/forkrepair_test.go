package lima

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// writeImage writes 64 KiB of pattern at offset into an image offline.
func writeImage(t *testing.T, image, pattern, offset string) {
	t.Helper()
	run(t, "qemu-io", "-f", "qcow2", "-c", "write -P "+pattern+" "+offset+" 64k", image)
}

// A fork sbf did not finish (it died between freezing the disk and
// renaming it) is finished at the next start: diffdisk is the disk the
// source last wrote, backing on the frozen base, whether sbf died before
// the renames or between them; the marker goes.
func TestAForkCutShortIsFinishedWhileStopped(t *testing.T) {
	for _, between := range []bool{false, true} {
		f := newFake(t)
		home := t.TempDir()
		f.env["LIMA_HOME"], f.env["PATH"] = home, os.Getenv("PATH")
		d := f.driver()
		dir := filepath.Join(home, "sbf-src")
		os.MkdirAll(dir, 0o700)
		diff := filepath.Join(dir, "diffdisk")
		run(t, "qemu-img", "create", "-q", "-f", "raw", filepath.Join(dir, "basedisk"), "64M")
		run(t, "qemu-img", "create", "-q", "-f", "qcow2", "-F", "raw", "-b", filepath.Join(dir, "basedisk"), diff)
		writeImage(t, diff, "0xab", "0") // before the fork
		fi := &forkImage{d: d, dir: dir, base: "fork-base-0a0b.qcow2", overlay: "diffdisk.fork-0a0b",
			state: "fork-0a0b.state"}
		if err := fi.markFork("0a0b"); err != nil {
			t.Fatal(err)
		}
		overlay := filepath.Join(dir, fi.overlay)
		run(t, "qemu-img", "create", "-q", "-f", "qcow2", "-F", "qcow2", "-b", diff, overlay) // as QEMU names it
		writeImage(t, overlay, "0xcd", "64k")                                                 // after the fork
		if between {
			os.Rename(diff, filepath.Join(dir, fi.base))
		}
		if err := d.repairFork(t.Context(), dir); err != nil {
			t.Fatalf("died between the renames: %v: %v", between, err)
		}
		if got := backingOf(t, diff); got != fi.base {
			t.Errorf("died between the renames: %v: diffdisk backs on %q, want %q", between, got, fi.base)
		}
		if !holds(t, diff, "0xab", 0) || !holds(t, diff, "0xcd", 64<<10) {
			t.Errorf("died between the renames: %v: diffdisk lost a write from before or after the fork", between)
		}
		if _, err := os.Stat(filepath.Join(dir, forkPending)); !os.IsNotExist(err) {
			t.Errorf("the marker stays after the repair: %v", err)
		}
		if err := d.repairFork(t.Context(), dir); err != nil { // nothing pending: nothing done
			t.Error(err)
		}
	}
}

// A source left paused by a fork that died mid-save runs again, its disk
// named as Lima opens it, when sbf next looks at it to fork it.
func TestAForkCutShortAtItsSwitchOverRunsTheSourceAgain(t *testing.T) {
	f := newFake(t)
	home := t.TempDir()
	f.env["LIMA_HOME"], f.env["PATH"] = home, os.Getenv("PATH")
	d := f.driver()
	dir, mon := realQEMUInstance(t, home, "sbf-src")
	fi := &forkImage{d: d, dir: dir, base: "fork-base-0c0d.qcow2", overlay: "diffdisk.fork-0c0d",
		state: "fork-0c0d.state"}
	if err := fi.markFork("0c0d"); err != nil {
		t.Fatal(err)
	}
	mon(func(q *qmp) {
		disk, err := q.disk(t.Context(), "")
		if err != nil {
			t.Fatal(err)
		}
		caps := []map[string]any{{"capability": "pause-before-switchover", "state": true}}
		if err := q.do(t.Context(), "migrate-set-capabilities", map[string]any{"capabilities": caps}, nil); err != nil {
			t.Fatal(err)
		}
		uri := "exec:cat > " + filepath.Join(dir, fi.state)
		if err := q.do(t.Context(), "migrate", map[string]any{"uri": uri}, nil); err != nil {
			t.Fatal(err)
		}
		for st := ""; st != "pre-switchover"; time.Sleep(50 * time.Millisecond) {
			var m struct {
				Status string `json:"status"`
			}
			if err := q.do(t.Context(), "query-migrate", nil, &m); err != nil {
				t.Fatal(err)
			}
			st = m.Status
		}
		if err := q.do(t.Context(), "blockdev-snapshot-sync", map[string]any{"device": disk.Device,
			"snapshot-file": filepath.Join(dir, fi.overlay), "format": "qcow2"}, nil); err != nil {
			t.Fatal(err)
		}
	}) // sbf dies here: the save stands at its switch-over, the VM stopped
	writeGuestDisk(t, mon, "0xcd", 64<<10)
	if err := d.repairFork(t.Context(), dir); err != nil {
		t.Fatal(err)
	}
	mon(func(q *qmp) {
		if st, err := q.status(t.Context()); err != nil || st != "running" {
			t.Errorf("the source after the repair: %q %v; want running", st, err)
		}
		var m struct {
			Status string `json:"status"`
		}
		if err := q.do(t.Context(), "query-migrate", nil, &m); err != nil || m.Status == "pre-switchover" {
			t.Errorf("the save cut short is left standing: %q %v", m.Status, err)
		}
		q.do(t.Context(), "quit", nil, nil)
	})
	if got := backingOf(t, filepath.Join(dir, "diffdisk")); got != fi.base {
		t.Errorf("diffdisk backs on %q, want %q", got, fi.base)
	}
	for i := 0; !holds(t, filepath.Join(dir, "diffdisk"), "0xcd", 64<<10); i++ { // QEMU lets go as it quits
		if i == 50 {
			t.Fatal("diffdisk lost the source's write after the fork")
		}
		time.Sleep(100 * time.Millisecond)
	}
}
