package sim

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sandboxforge/sbf/drivers"
)

func startedSims(t *testing.T, names ...string) (*Driver, context.Context) {
	t.Helper()
	ctx := context.Background()
	d := newSim(t, t.TempDir(), "")
	for _, n := range names {
		s := drivers.Spec{Name: n, CPUs: 2, MemoryGiB: 2, DiskGiB: 10}
		if err := d.Create(ctx, s); err != nil {
			t.Fatal(err)
		}
		if err := d.Start(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	return d, ctx
}

func writeGuest(t *testing.T, d *Driver, instance, p, body string) {
	t.Helper()
	full := d.GuestPath(instance, p)
	os.MkdirAll(filepath.Dir(full), 0o755)
	if err := os.WriteFile(full, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readGuest(d *Driver, instance, p string) string {
	b, err := os.ReadFile(d.GuestPath(instance, p))
	if err != nil {
		return "<" + err.Error() + ">"
	}
	return string(b)
}

func TestSnapshotRestoreBringsTheGuestFolderBack(t *testing.T) {
	const inst = "sbf-01234567-api"
	d, ctx := startedSims(t, inst)
	writeGuest(t, d, inst, "/work/a.txt", "before")
	os.Symlink("/etc/passwd", d.GuestPath(inst, "/work/link"))
	info, err := d.Snapshot(ctx, inst, "clean")
	if err != nil || info.Name != "clean" || info.SizeBytes != int64(len("before")) || info.CreatedAt.IsZero() {
		t.Fatalf("snapshot: %+v %v", info, err)
	}
	if _, err := d.Snapshot(ctx, inst, "clean"); err == nil {
		t.Error("a second snapshot of the same name replaced the first")
	}
	writeGuest(t, d, inst, "/work/a.txt", "after")
	writeGuest(t, d, inst, "/work/new.txt", "new")
	if err := d.RestoreSnapshot(ctx, inst, "clean"); err != nil {
		t.Fatal(err)
	}
	if got := readGuest(d, inst, "/work/a.txt"); got != "before" {
		t.Errorf("a.txt after restore: %q", got)
	}
	if _, err := os.Lstat(d.GuestPath(inst, "/work/new.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a file written after the snapshot survived the restore: %v", err)
	}
	if target, err := os.Readlink(d.GuestPath(inst, "/work/link")); err != nil || target != "/etc/passwd" {
		t.Errorf("a link was not kept as a link: %q %v", target, err)
	}
	list, err := d.ListSnapshots(ctx, inst)
	if err != nil || len(list) != 1 || list[0] != info {
		t.Errorf("list: %+v %v (want %+v)", list, err, info)
	}
	if err := d.DeleteSnapshot(ctx, inst, "clean"); err != nil {
		t.Fatal(err)
	}
	for _, err := range []error{d.DeleteSnapshot(ctx, inst, "clean"), d.RestoreSnapshot(ctx, inst, "clean")} {
		if !errors.Is(err, drivers.ErrSnapshotNotFound) {
			t.Errorf("a deleted snapshot: %v", err)
		}
	}
}

func TestSnapshotsRefuseBadNamesAndMissingInstances(t *testing.T) {
	const inst = "sbf-01234567-api"
	d, ctx := startedSims(t, inst)
	for _, bad := range []string{"../../x", "a/b", "-x", ""} {
		if _, err := d.Snapshot(ctx, inst, bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if _, err := d.Snapshot(ctx, "sbf-01234567-gone", "x"); !errors.Is(err, drivers.ErrNotFound) {
		t.Errorf("a missing instance: %v", err)
	}
	entries, _ := os.ReadDir(filepath.Join(d.Dir(), "snapshots"))
	for _, e := range entries {
		if e.Name() != inst {
			t.Errorf("left %s in the snapshots folder", e.Name())
		}
	}
}

func TestDeleteTakesTheSnapshotsAlong(t *testing.T) {
	const inst = "sbf-01234567-api"
	d, ctx := startedSims(t, inst)
	if _, err := d.Snapshot(ctx, inst, "s1"); err != nil {
		t.Fatal(err)
	}
	if err := d.Delete(ctx, inst); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(d.snapshotDir(inst)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("snapshots outlived their instance: %v", err)
	}
	s := drivers.Spec{Name: inst, CPUs: 1}
	d.Create(ctx, s)
	if list, err := d.ListSnapshots(ctx, inst); err != nil || len(list) != 0 {
		t.Errorf("a new instance of the same name inherited %+v (%v)", list, err)
	}
}

func TestCloneCopiesTheDiskAndRunsApart(t *testing.T) {
	const src, dst, old = "sbf-01234567-api", "sbf-01234567-api-2", "sbf-01234567-api-3"
	d, ctx := startedSims(t, src)
	writeGuest(t, d, src, "/work/a.txt", "v1")
	d.Snapshot(ctx, src, "v1")
	writeGuest(t, d, src, "/work/a.txt", "v2")
	want := drivers.Spec{Name: dst, CPUs: 3, MemoryGiB: 2, DiskGiB: 10}
	if err := d.Clone(ctx, drivers.Spec{Name: src}, "", want); err != nil {
		t.Fatal(err)
	}
	list, _ := d.List(ctx)
	if len(list) != 2 || list[1].Name != dst || list[1].Status != drivers.Stopped || !list[1].Reported.Equal(want) {
		t.Fatalf("after clone: %+v", list)
	}
	d.Start(ctx, want)
	writeGuest(t, d, dst, "/work/a.txt", "clone")
	if readGuest(d, src, "/work/a.txt") != "v2" || readGuest(d, dst, "/work/a.txt") != "clone" {
		t.Error("source and clone share a disk")
	}
	if got, _ := d.ListSnapshots(ctx, dst); len(got) != 0 {
		t.Errorf("the clone carried the source's snapshots over: %+v", got)
	}
	if err := d.Clone(ctx, drivers.Spec{Name: src}, "v1", drivers.Spec{Name: old}); err != nil {
		t.Fatal(err)
	}
	d.Start(ctx, drivers.Spec{Name: old})
	if got := readGuest(d, old, "/work/a.txt"); got != "v1" {
		t.Errorf("a clone from snapshot v1 reads %q", got)
	}
	for _, c := range []struct{ src, snap, dst string }{{src, "", dst}, {"sbf-01234567-gone", "", "sbf-01234567-x"},
		{src, "nope", "sbf-01234567-y"}} {
		if err := d.Clone(ctx, drivers.Spec{Name: c.src}, c.snap, drivers.Spec{Name: c.dst}); err == nil {
			t.Errorf("clone %+v succeeded", c)
		}
	}
	if list, _ := d.List(ctx); len(list) != 3 {
		t.Errorf("a failed clone left an instance: %+v", list)
	}
	ops, _ := ReadLog(d.Dir())
	var names []string
	for _, o := range ops {
		names = append(names, o.Op)
	}
	if !strings.Contains(strings.Join(names, " "), "clone") {
		t.Errorf("clones are not in the operation log: %v", names)
	}
}
