package lima

import (
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sandboxforge/sbf/drivers"
)

// These run the real qemu-img and qemu-io on small disks laid out as
// Lima's are: a raw basedisk and a qcow2 diffdisk backed by it.

func realQemuImg(t *testing.T) qemuImg {
	t.Helper()
	p, err := exec.LookPath("qemu-img")
	if err != nil {
		t.Skip("qemu-img is not installed")
	}
	if _, err := exec.LookPath("qemu-io"); err != nil {
		t.Skip("qemu-io is not installed")
	}
	return qemuImg{p}
}

func sh(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil || strings.Contains(string(out), "verification failed") {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// limaDisk makes base (4 MiB, written by writes on the raw file) and a
// diffdisk backed by it, and returns the diffdisk.
func limaDisk(t *testing.T, baseWrites ...string) string {
	t.Helper()
	dir := t.TempDir()
	base, diff := filepath.Join(dir, "basedisk"), filepath.Join(dir, "diffdisk")
	sh(t, "qemu-img", "create", "-f", "raw", base, "4M")
	for _, w := range baseWrites {
		sh(t, "qemu-io", "-f", "raw", "-c", w, base)
	}
	sh(t, "qemu-img", "create", "-f", "qcow2", "-F", "raw", "-b", base, diff)
	return diff
}

func reads(t *testing.T, disk string, checks ...string) {
	t.Helper()
	args := []string{"-f", "qcow2"}
	for _, c := range checks {
		args = append(args, "-c", c)
	}
	sh(t, "qemu-io", append(args, disk)...)
}

func TestExportedSnapshotImportsIntoAnotherDiskWithoutChangingIt(t *testing.T) {
	q := realQemuImg(t)
	ctx := context.Background()
	a := limaDisk(t, "write -P 0xaa 0 1M") // 1M-4M of a's base is zero
	sh(t, "qemu-io", "-c", "write -P 0xbb 1M 1M", a)
	sh(t, "qemu-img", "snapshot", "-c", "s1", a)
	sh(t, "qemu-io", "-c", "write -P 0xcc 0 4M", a)
	exp := filepath.Join(t.TempDir(), "s1.qcow2")
	if err := q.exportDisk(ctx, a, "s1", exp); err != nil {
		t.Fatal(err)
	}
	reads(t, exp, "read -P 0xaa 0 1M", "read -P 0xbb 1M 1M", "read -P 0 2M 2M")

	b := limaDisk(t, "write -P 0xdd 0 4M")
	sh(t, "qemu-io", "-c", "write -P 0xee 0 512k", b)
	if err := q.importDisk(ctx, b, "moved", exp); err != nil {
		t.Fatal(err)
	}
	reads(t, b, "read -P 0xee 0 512k", "read -P 0xdd 512k 3584k") // b's current disk is as it was
	if list := parseSnapshotList(sh(t, "qemu-img", "snapshot", "-l", b)); len(list) != 1 || list[0].Name != "moved" ||
		list[0].SizeBytes != 0 {
		t.Errorf("b's snapshots: %+v", list)
	}
	sh(t, "qemu-img", "snapshot", "-a", "moved", b)
	// The zeroes of the export hide b's base (0xdd) where a's base was zero.
	reads(t, b, "read -P 0xaa 0 1M", "read -P 0xbb 1M 1M", "read -P 0 2M 2M")
	sh(t, "qemu-img", "compare", exp, b)
}

func TestImportRefusesWhatIsNotAStandaloneExportOfTheSameSize(t *testing.T) {
	q := realQemuImg(t)
	ctx := context.Background()
	b := limaDisk(t, "write -P 0xdd 0 4M")
	dir := t.TempDir()
	secret := filepath.Join(dir, "secret.raw")
	sh(t, "qemu-img", "create", "-f", "raw", secret, "4M")
	sh(t, "qemu-io", "-f", "raw", "-c", "write -P 0x55 0 4M", secret)
	backed := filepath.Join(dir, "backed.qcow2")
	sh(t, "qemu-img", "create", "-f", "qcow2", "-F", "raw", "-b", secret, backed)
	small := filepath.Join(dir, "small.qcow2")
	sh(t, "qemu-img", "create", "-f", "qcow2", small, "2M")
	raw := filepath.Join(dir, "plain.raw")
	sh(t, "qemu-img", "create", "-f", "raw", raw, "4M")
	for _, src := range []string{backed, small, raw, filepath.Join(dir, "missing")} {
		if err := q.importDisk(ctx, b, "x", src); err == nil {
			t.Errorf("%s was imported", filepath.Base(src))
		}
	}
	if list := parseSnapshotList(sh(t, "qemu-img", "snapshot", "-l", b)); len(list) != 0 {
		t.Errorf("a refused import left snapshots: %+v", list)
	}
	reads(t, b, "read -P 0xdd 0 4M")
}

// qemu-img itself would take a tag twice.
func TestImportRefusesATakenName(t *testing.T) {
	q := realQemuImg(t)
	ctx := context.Background()
	a := limaDisk(t)
	sh(t, "qemu-img", "snapshot", "-c", "s1", a)
	exp := filepath.Join(t.TempDir(), "s1.qcow2")
	if err := q.exportDisk(ctx, a, "s1", exp); err != nil {
		t.Fatal(err)
	}
	b := limaDisk(t)
	sh(t, "qemu-io", "-c", "write -P 0xee 0 4M", b)
	sh(t, "qemu-img", "snapshot", "-c", "taken", b)
	if err := q.importDisk(ctx, b, "taken", exp); err == nil {
		t.Fatal("an import over an existing snapshot succeeded")
	}
	reads(t, b, "read -P 0xee 0 4M")
	if list := parseSnapshotList(sh(t, "qemu-img", "snapshot", "-l", b)); len(list) != 1 || list[0].Name != "taken" {
		t.Errorf("b's snapshots after a failed import: %+v", list)
	}
}

func TestImportAndDiskOnlyRestoreAskARunningVMToStop(t *testing.T) {
	_, d, _ := homeFake(t)
	ctx := context.Background()
	s := qemuNamed("sbf-01234567-api")
	if err := d.Create(ctx, s); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Snapshot(ctx, s.Name, "cold"); err != nil { // stopped: disk only
		t.Fatal(err)
	}
	if err := d.Start(ctx, s); err != nil {
		t.Fatal(err)
	}
	if err := d.RestoreSnapshot(ctx, s.Name, "cold"); !errors.Is(err, drivers.ErrStopFirst) {
		t.Errorf("restoring a disk-only snapshot of a running VM: %v", err)
	}
	if err := d.ImportSnapshot(ctx, s.Name, "new", "/nowhere.qcow2"); !errors.Is(err, drivers.ErrStopFirst) {
		t.Errorf("importing into a running VM: %v", err)
	}
	if err := d.ImportSnapshot(ctx, s.Name, "cold", "/nowhere.qcow2"); err == nil {
		t.Error("an import took a snapshot's name")
	}
	if err := d.Stop(ctx, s.Name); err != nil {
		t.Fatal(err)
	}
	if err := d.RestoreSnapshot(ctx, s.Name, "cold"); err != nil {
		t.Errorf("restoring a disk-only snapshot of a stopped VM: %v", err)
	}
}
