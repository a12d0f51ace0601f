package lima

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/sandboxforge/sbf/drivers"
)

// A memory template is a fork kept: SaveTemplate saves the running VM and
// halts it (limactl stop --force); OpenTemplate finds the saved state in
// its folder however often it is opened, Release keeps it, and a child's
// QEMU starts from it with the disk as it was at the save.
func TestAMemoryTemplateIsAForkKeptForLaterCreates(t *testing.T) {
	f := newFake(t)
	home := t.TempDir()
	f.env["LIMA_HOME"], f.env["PATH"] = home, os.Getenv("PATH")
	d := f.driver()
	dir, mon := realQEMUInstance(t, home, "sbf-pool-0123abcd-1")
	writeGuestDisk(t, mon, "0xab", 0)
	if err := d.SaveTemplate(t.Context(), drivers.Spec{Name: "sbf-pool-0123abcd-1", VMType: "qemu"}); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(f.argv(), "--tty=false stop --force sbf-pool-0123abcd-1") {
		t.Errorf("the template was not halted: %v", f.argv())
	}
	for i, child := range []string{"sbf-a", "sbf-b"} {
		img, err := d.OpenTemplate(t.Context(), "sbf-pool-0123abcd-1")
		if err != nil {
			t.Fatalf("opening the template (time %d): %v", i+1, err)
		}
		fi := img.(keptImage).forkImage
		cdir := filepath.Join(home, child)
		os.MkdirAll(cdir, 0o700)
		if err := fi.childDisk(t.Context(), cdir); err != nil {
			t.Fatal(err)
		}
		if err := img.Release(t.Context()); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(filepath.Join(dir, fi.state)); err != nil {
			t.Fatalf("Release removed the template's saved memory: %v", err)
		}
		if !holds(t, filepath.Join(cdir, "diffdisk"), "0xab", 0) {
			t.Errorf("%s's disk lacks what the template wrote before its save", child)
		}
		cmon := startQEMU(t, cdir, "-incoming", "exec:cat "+filepath.Join(dir, fi.state))
		waitRunning(t, cmon, child)
	}
	os.MkdirAll(filepath.Join(home, "sbf-plain"), 0o700)
	if _, err := d.OpenTemplate(t.Context(), "sbf-plain"); !errors.Is(err, drivers.ErrNotFound) {
		t.Errorf("opening an instance that is no template: %v; want ErrNotFound", err)
	}
}
