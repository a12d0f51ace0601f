package sim

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sandboxforge/sbf/drivers"
)

func forkChild(t *testing.T, name string) drivers.ForkChild {
	t.Helper()
	id, err := drivers.NewForkIdentity(name, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return drivers.ForkChild{Spec: drivers.Spec{Name: name, CPUs: 2, MemoryGiB: 2, DiskGiB: 10}, Identity: id}
}

func TestForkChildrenRunFromTheSavedStateEachWithItsOwnFilesAndIdentity(t *testing.T) {
	const src = "sbf-01234567-api"
	d, ctx := startedSims(t, src)
	writeGuest(t, d, src, "/work/state.txt", "warm")
	writeGuest(t, d, src, "/etc/hostname", src+"\n")
	img, err := d.SaveForFork(ctx, drivers.Spec{Name: src})
	if err != nil {
		t.Fatal(err)
	}
	writeGuest(t, d, src, "/work/state.txt", "after the save") // the source runs on
	a, b := forkChild(t, "sbf-01234567-api-fork-1"), forkChild(t, "sbf-01234567-api-fork-2")
	for _, c := range []drivers.ForkChild{a, b} {
		if err := img.StartChild(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	if err := img.StartChild(ctx, a); err == nil {
		t.Error("a child made twice")
	}
	if err := img.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if left, _ := filepath.Glob(filepath.Join(d.Dir(), "snapshots", ".work-*")); len(left) > 0 {
		t.Errorf("the saved state outlived Release: %v", left)
	}
	list, _ := d.List(ctx)
	for _, inst := range list {
		if inst.Status != drivers.Running {
			t.Errorf("%s is %s, want running without a start", inst.Name, inst.Status)
		}
	}
	if len(list) != 3 {
		t.Fatalf("listed %d instances, want the source and 2 children", len(list))
	}
	writeGuest(t, d, a.Spec.Name, "/work/state.txt", "child a's")
	for inst, want := range map[string]string{src: "after the save", b.Spec.Name: "warm", a.Spec.Name: "child a's"} {
		if got := readGuest(d, inst, "/work/state.txt"); got != want {
			t.Errorf("%s reads %q, want %q (a write reached another instance)", inst, got, want)
		}
	}
	if got := readGuest(d, src, "/etc/hostname"); got != src+"\n" {
		t.Errorf("the source's hostname became %q", got)
	}
	for _, c := range []drivers.ForkChild{a, b} {
		if got := strings.TrimSpace(readGuest(d, c.Spec.Name, "/etc/hostname")); got != c.Spec.Name {
			t.Errorf("%s's hostname is %q", c.Spec.Name, got)
		}
		if got := strings.TrimSpace(readGuest(d, c.Spec.Name, "/etc/machine-id")); got != c.Identity.MachineID {
			t.Errorf("%s's machine id is %q, want %q", c.Spec.Name, got, c.Identity.MachineID)
		}
	}
	if a.Identity.MachineID == b.Identity.MachineID || a.Identity.Seed == b.Identity.Seed {
		t.Error("two children drew the same identity")
	}
}

func TestForkIdentityIsWrittenInsideTheChildNeverThroughALink(t *testing.T) {
	const src = "sbf-01234567-api"
	d, ctx := startedSims(t, src)
	outside := filepath.Join(t.TempDir(), "host-file")
	os.WriteFile(outside, []byte("host"), 0o644)
	os.MkdirAll(d.GuestPath(src, "/etc"), 0o755)
	os.Symlink(outside, d.GuestPath(src, "/etc/machine-id")) // the guest's link
	img, err := d.SaveForFork(ctx, drivers.Spec{Name: src})
	if err != nil {
		t.Fatal(err)
	}
	defer img.Release(ctx)
	c := forkChild(t, "sbf-01234567-api-fork-1")
	if err := img.StartChild(ctx, c); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(outside); string(b) != "host" {
		t.Fatalf("the fork wrote through the guest's link to a host file: %q", b)
	}
	if got := strings.TrimSpace(readGuest(d, c.Spec.Name, "/etc/machine-id")); got != c.Identity.MachineID {
		t.Errorf("machine id %q", got)
	}
}

func TestForkOfAStoppedInstanceIsRefusedAndSavesNothing(t *testing.T) {
	const src = "sbf-01234567-api"
	d, ctx := startedSims(t, src)
	if err := d.Stop(ctx, src); err != nil {
		t.Fatal(err)
	}
	if _, err := d.SaveForFork(ctx, drivers.Spec{Name: src}); err == nil || !strings.Contains(err.Error(), "not running") {
		t.Fatalf("forking a stopped instance: %v", err)
	}
	if left, _ := filepath.Glob(filepath.Join(d.Dir(), "snapshots", ".work-*")); len(left) > 0 {
		t.Errorf("a refused fork left %v", left)
	}
}

func TestTheSimForksByItsType(t *testing.T) {
	if drivers.CapabilitiesOf((*Driver)(nil)).Fork == nil {
		t.Fatal("the sim's type does not state the fork capability")
	}
}
