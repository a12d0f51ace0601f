package sim

import (
	"archive/tar"
	"os"
	"path/filepath"
	"testing"
)

func TestExportImportCarriesASnapshotToAnotherInstance(t *testing.T) {
	const a, b = "sbf-01234567-a", "sbf-01234567-b"
	d, ctx := startedSims(t, a, b)
	writeGuest(t, d, a, "/work/a.txt", "exported")
	os.Symlink("/etc/passwd", d.GuestPath(a, "/work/link"))
	if _, err := d.Snapshot(ctx, a, "clean"); err != nil {
		t.Fatal(err)
	}
	writeGuest(t, d, a, "/work/a.txt", "later")
	file := filepath.Join(t.TempDir(), "clean.tar")
	os.WriteFile(file, nil, 0o600)
	if err := d.ExportSnapshot(ctx, a, "clean", file); err != nil {
		t.Fatal(err)
	}
	writeGuest(t, d, b, "/work/a.txt", "b's own")
	if err := d.ImportSnapshot(ctx, b, "moved", file); err != nil {
		t.Fatal(err)
	}
	if got := readGuest(d, b, "/work/a.txt"); got != "b's own" {
		t.Errorf("an import changed the guest folder: %q", got)
	}
	if err := d.ImportSnapshot(ctx, b, "moved", file); err == nil {
		t.Error("an import replaced a snapshot of the same name")
	}
	if err := d.RestoreSnapshot(ctx, b, "moved"); err != nil {
		t.Fatal(err)
	}
	if got := readGuest(d, b, "/work/a.txt"); got != "exported" {
		t.Errorf("after restoring the import: %q", got)
	}
	if target, err := os.Readlink(d.GuestPath(b, "/work/link")); err != nil || target != "/etc/passwd" {
		t.Errorf("a link was not kept as a link: %q %v", target, err)
	}
	if list, _ := d.ListSnapshots(ctx, b); len(list) != 1 || list[0].SizeBytes != int64(len("exported")) {
		t.Errorf("list: %+v", list)
	}
}

func TestImportRefusesEntriesOutsideTheGuestFolder(t *testing.T) {
	const inst = "sbf-01234567-a"
	d, ctx := startedSims(t, inst)
	for _, name := range []string{"guest/../../escaped", "/etc/escaped", "other/escaped"} {
		file := filepath.Join(t.TempDir(), "evil.tar")
		f, _ := os.Create(file)
		tw := tar.NewWriter(f)
		tw.WriteHeader(&tar.Header{Name: "guest/", Typeflag: tar.TypeDir, Mode: 0o755})
		tw.WriteHeader(&tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o644, Size: 1})
		tw.Write([]byte("x"))
		tw.Close()
		f.Close()
		if err := d.ImportSnapshot(ctx, inst, "evil", file); err == nil {
			t.Errorf("an export holding %q was imported", name)
		}
		if list, _ := d.ListSnapshots(ctx, inst); len(list) != 0 {
			t.Errorf("a refused import left a snapshot: %+v", list)
		}
	}
	matches, _ := filepath.Glob(filepath.Join(d.dir, "*", "escaped"))
	if len(matches) != 0 {
		t.Errorf("an entry escaped: %v", matches)
	}
}
