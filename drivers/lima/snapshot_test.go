package lima

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/internal/coded"
)

// homeFake is the fake limactl keeping instances in LIMA_HOME, as the
// contract tests use it.
func homeFake(t *testing.T) (*fake, *Driver, string) {
	f := newFake(t)
	home := filepath.Join(f.dir, "home")
	if err := os.Mkdir(home, 0o755); err != nil {
		t.Fatal(err)
	}
	f.env["LIMA_HOME"] = home
	f.env["PATH"] += string(os.PathListSeparator) + os.Getenv("PATH")
	return f, f.driver(), home
}

func qemuNamed(name string) drivers.Spec {
	return drivers.Spec{Name: name, CPUs: 2, MemoryGiB: 2, DiskGiB: 10, VMType: "qemu", Arch: "x86_64",
		Image: drivers.Image{Location: "/img/disk.img"}}
}

func running(t *testing.T, d *Driver, s drivers.Spec) {
	t.Helper()
	ctx := context.Background()
	if err := d.Create(ctx, s); err != nil {
		t.Fatal(err)
	}
	if err := d.Start(ctx, s); err != nil {
		t.Fatal(err)
	}
}

func disk(t *testing.T, home, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(home, name, "disk"))
	if err != nil {
		return "<" + err.Error() + ">"
	}
	return string(b)
}

func setDisk(t *testing.T, home, name, body string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(home, name, "disk"), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestSnapshotsAreLimactlSnapshots(t *testing.T) {
	f, d, home := homeFake(t)
	ctx := context.Background()
	s := qemuNamed("sbf-01234567-api")
	running(t, d, s)
	setDisk(t, home, s.Name, "before")
	info, err := d.Snapshot(ctx, s.Name, "clean")
	if err != nil || info.Name != "clean" || info.SizeBytes != 241<<20 || info.CreatedAt.IsZero() {
		t.Fatalf("snapshot: %+v %v", info, err)
	}
	if !strings.Contains(strings.Join(f.argv(), "\n"), "--tty=false snapshot create --tag=clean "+s.Name) {
		t.Errorf("argv: %q", f.argv())
	}
	if _, err := d.Snapshot(ctx, s.Name, "clean"); err == nil {
		t.Error("a second snapshot named clean replaced the first (savevm would)")
	}
	setDisk(t, home, s.Name, "after")
	if err := d.RestoreSnapshot(ctx, s.Name, "clean"); err != nil {
		t.Fatal(err)
	}
	if got := disk(t, home, s.Name); got != "before" {
		t.Errorf("disk after restore: %q", got)
	}
	list, err := d.ListSnapshots(ctx, s.Name)
	if err != nil || len(list) != 1 || list[0].Name != "clean" || list[0].CreatedAt.IsZero() {
		t.Errorf("list: %+v %v", list, err)
	}
	if err := d.DeleteSnapshot(ctx, s.Name, "clean"); err != nil {
		t.Fatal(err)
	}
	for _, err := range []error{d.DeleteSnapshot(ctx, s.Name, "clean"), d.RestoreSnapshot(ctx, s.Name, "clean")} {
		if !errors.Is(err, drivers.ErrSnapshotNotFound) {
			t.Errorf("a deleted snapshot: %v", err)
		}
	}
	if _, err := d.Snapshot(ctx, "sbf-01234567-gone", "x"); !errors.Is(err, drivers.ErrNotFound) {
		t.Errorf("a missing instance: %v", err)
	}
	if _, err := d.Snapshot(ctx, s.Name, "--help"); err == nil {
		t.Error("an option was taken for a name")
	}
}

func TestSnapshotsOfAVzVMAreRefusedWithNextSteps(t *testing.T) {
	_, d, home := homeFake(t)
	name := "sbf-01234567-mac"
	os.MkdirAll(filepath.Join(home, name), 0o755)
	os.WriteFile(filepath.Join(home, name, "status"), []byte("Running\n"), 0o644)
	os.WriteFile(filepath.Join(home, name, "lima.yaml"), []byte("vmType: vz\narch: aarch64\ncpus: 2\n"), 0o644)
	_, err := d.Snapshot(context.Background(), name, "x")
	ce := coded.Of(err, coded.Unknown)
	if ce.Code != coded.SnapshotUnsupported || !strings.Contains(ce.Message, `vm_type = "qemu"`) {
		t.Errorf("%+v", ce)
	}
}

func TestCloneStopsARunningSourceCopiesItAndStartsItAgain(t *testing.T) {
	f, d, home := homeFake(t)
	ctx := context.Background()
	src := qemuNamed("sbf-01234567-api")
	running(t, d, src)
	setDisk(t, home, src.Name, "v1")
	d.Snapshot(ctx, src.Name, "v1")
	setDisk(t, home, src.Name, "v2")
	os.WriteFile(filepath.Join(home, src.Name, drivers.OwnerLabelFile), []byte(`{"workspace":"ws_1"}`), 0o644)
	dst := qemuNamed("sbf-01234567-api-2")
	dst.CPUs = 3
	os.Remove(filepath.Join(f.dir, "argv.log"))
	if err := d.Clone(ctx, src, "", dst); err != nil {
		t.Fatal(err)
	}
	var verbs []string
	for _, line := range f.argv() {
		if w := strings.Fields(line); len(w) > 1 && w[1] != "list" && w[1] != "snapshot" {
			verbs = append(verbs, w[1])
		}
	}
	if got := strings.Join(verbs, " "); got != "stop clone edit start" {
		t.Errorf("limactl verbs: %s", got)
	}
	list, _ := d.List(ctx)
	byName := map[string]drivers.Instance{}
	for _, i := range list {
		byName[i.Name] = i
	}
	if byName[src.Name].Status != drivers.Running || byName[dst.Name].Status != drivers.Stopped ||
		byName[dst.Name].Reported.CPUs != 3 {
		t.Errorf("after clone: %+v", list)
	}
	if byName[dst.Name].Label != nil {
		t.Errorf("the clone kept its source's owner label: %+v", byName[dst.Name].Label)
	}
	if got, _ := d.ListSnapshots(ctx, dst.Name); len(got) != 0 || disk(t, home, dst.Name) != "v2" {
		t.Errorf("clone: snapshots %+v, disk %q", got, disk(t, home, dst.Name))
	}
	from := qemuNamed("sbf-01234567-api-3")
	if err := d.Clone(ctx, src, "v1", from); err != nil {
		t.Fatal(err)
	}
	if disk(t, home, from.Name) != "v1" {
		t.Errorf("a clone of snapshot v1 has disk %q", disk(t, home, from.Name))
	}
	if err := d.Clone(ctx, src, "nope", qemuNamed("sbf-01234567-api-4")); !errors.Is(err, drivers.ErrSnapshotNotFound) {
		t.Errorf("clone of a missing snapshot: %v", err)
	}
	if err := d.Clone(ctx, src, "", dst); err == nil {
		t.Error("a clone replaced an existing instance")
	}
	if _, err := os.Stat(filepath.Join(home, "sbf-01234567-api-4")); err == nil {
		t.Error("a failed clone left its instance")
	}
}

func TestParseSnapshotList(t *testing.T) {
	stopped := "ID        TAG               VM SIZE                DATE     VM CLOCK     ICOUNT\n" +
		"1         clean                 0 B 2026-01-02 10:00:00 00:00:00.000          0\n"
	runningVM := "ID        TAG               VM_SIZE                DATE        VM_CLOCK     ICOUNT\n" +
		"--        before-migration   1.5 GiB 2026-01-02 10:00:00  0000:00:12.345         --\n" +
		"List of partial (non-loadable) snapshots on 'disk':\n"
	got := parseSnapshotList(stopped + runningVM)
	want := time.Date(2026, 1, 2, 10, 0, 0, 0, time.Local).UTC()
	if len(got) != 2 || got[0].Name != "clean" || got[0].SizeBytes != 0 || !got[0].CreatedAt.Equal(want) ||
		got[1].Name != "before-migration" || got[1].SizeBytes != 3<<29 {
		t.Errorf("%+v", got)
	}
	if got := parseSnapshotList(""); len(got) != 0 {
		t.Errorf("empty: %+v", got)
	}
}
