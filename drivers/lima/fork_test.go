package lima

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sandboxforge/sbf/drivers"
)

// realQEMUInstance starts a real QEMU (software emulation, no guest OS) as
// Lima would for instance name in home: a qcow2 diffdisk over a raw
// basedisk named by its absolute path, and the monitor socket in the folder
// (one client at a time: mon connects for each use).
func realQEMUInstance(t *testing.T, home, name string) (dir string, mon func(func(*qmp))) {
	t.Helper()
	for _, tool := range []string{"qemu-system-x86_64", "qemu-img", "qemu-io"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed (scripts/host-deps.sh installs it)", tool)
		}
	}
	dir = filepath.Join(home, name)
	os.MkdirAll(dir, 0o700)
	run(t, "qemu-img", "create", "-q", "-f", "raw", filepath.Join(dir, "basedisk"), "64M")
	run(t, "qemu-img", "create", "-q", "-f", "qcow2", "-F", "raw", "-b", filepath.Join(dir, "basedisk"),
		filepath.Join(dir, "diffdisk"))
	return dir, startQEMU(t, dir)
}

// startQEMU runs QEMU on the instance in dir as Lima's wrapper would, with
// args added (-incoming for a fork's child).
func startQEMU(t *testing.T, dir string, args ...string) (mon func(func(*qmp))) {
	t.Helper()
	sock := filepath.Join(dir, "qmp.sock")
	cmd := exec.Command("qemu-system-x86_64", append([]string{"-machine", "q35,accel=tcg", "-m", "64",
		"-display", "none", "-nodefaults", "-chardev", "socket,id=char-qmp,path=" + sock + ",server=on,wait=off",
		"-qmp", "chardev:char-qmp", "-drive", "file=" + filepath.Join(dir, "diffdisk") + ",if=virtio,format=qcow2",
		"-device", "vmgenid,guid=auto"}, args...)...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return func(use func(*qmp)) {
		t.Helper()
		for i := 0; ; i++ {
			q, err := dialQMP(t.Context(), sock)
			if err == nil {
				defer q.Close()
				use(q)
				return
			} else if i == 200 {
				t.Fatal(err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}

// waitRunning waits until a child's QEMU has read its saved memory and
// runs (a live save's child runs at once; one saved paused is continued).
func waitRunning(t *testing.T, mon func(func(*qmp)), child string) {
	t.Helper()
	for resumed, tries := false, 0; !resumed; tries++ {
		if tries == 400 {
			t.Fatalf("%s's QEMU never read the saved memory", child)
		}
		time.Sleep(50 * time.Millisecond)
		mon(func(q *qmp) {
			if st, err := q.status(t.Context()); err == nil && st == "running" {
				resumed = true
			} else if err == nil && st == "paused" {
				resumed = q.do(t.Context(), "cont", nil, nil) == nil
			}
		})
	}
}

func run(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %v: %v\n%s", name, args, err, out)
	}
	return string(out)
}

// writeGuestDisk writes 64 KiB of pattern at offset through QEMU's own
// block layer, as the guest would.
func writeGuestDisk(t *testing.T, mon func(func(*qmp)), pattern string, offset int) {
	t.Helper()
	cmd := map[string]any{"command-line": `qemu-io virtio0 "write -P ` + pattern + " " + strconv.Itoa(offset) + ` 64k"`}
	mon(func(q *qmp) {
		if err := q.do(t.Context(), "human-monitor-command", cmd, nil); err != nil {
			t.Fatal(err)
		}
	})
}

// holds says whether image reads pattern at offset (offline, read-only).
func holds(t *testing.T, image, pattern string, offset int) bool {
	out, _ := exec.Command("qemu-io", "-r", "-f", "qcow2", "-c",
		"read -P "+pattern+" "+strconv.Itoa(offset)+" 64k", image).CombinedOutput()
	return !strings.Contains(string(out), "verification failed") && !strings.Contains(string(out), "Could not open")
}

func backingOf(t *testing.T, image string) string {
	var info struct {
		Backing string `json:"backing-filename"`
	}
	json.Unmarshal([]byte(run(t, "qemu-img", "info", "-U", "--output=json", image)), &info)
	return info.Backing
}

// A save pauses the source, freezes its disk into a base and its memory
// into a file, and the source runs on writing to a disk of its own; a
// child's disk made from the base keeps what was written before the fork
// and nothing after, and stays whole when the source's folder is deleted.
func TestAForkSaveFreezesTheDiskAndTheSourceRunsOn(t *testing.T) {
	f := newFake(t)
	home := t.TempDir()
	f.env["LIMA_HOME"] = home
	f.env["PATH"] = os.Getenv("PATH")
	d := f.driver()
	dir, mon := realQEMUInstance(t, home, "sbf-src")
	writeGuestDisk(t, mon, "0xab", 0) // before the fork

	img, err := d.SaveForFork(t.Context(), drivers.Spec{Name: "sbf-src", VMType: "qemu"})
	if err != nil {
		t.Fatal(err)
	}
	fi := img.(*forkImage)
	mon(func(q *qmp) {
		if st, err := q.status(t.Context()); err != nil || st != "running" {
			t.Fatalf("the source after the save: %q %v; want running", st, err)
		}
	})
	if info, err := os.Stat(filepath.Join(dir, fi.state)); err != nil || info.Size() == 0 {
		t.Fatalf("no saved memory: %v", err)
	}
	writeGuestDisk(t, mon, "0xcd", 64<<10) // the source after the fork

	child := filepath.Join(home, "sbf-child")
	os.MkdirAll(child, 0o700)
	if err := fi.childDisk(context.Background(), child); err != nil {
		t.Fatal(err)
	}
	if err := img.Release(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, fi.state)); !os.IsNotExist(err) {
		t.Errorf("Release left the saved memory: %v", err)
	}
	// QEMU 7.2 cannot save the VM again: a second fork is refused before it pauses the source.
	_, err = d.SaveForFork(t.Context(), drivers.Spec{Name: "sbf-src", VMType: "qemu"})
	var u *drivers.UnsupportedError
	if !errors.As(err, &u) {
		t.Errorf("a second fork of one start: %v; want FORK_UNSUPPORTED", err)
	}
	mon(func(q *qmp) {
		if st, err := q.status(t.Context()); err != nil || st != "running" {
			t.Errorf("the source after a refused second fork: %q %v; want running", st, err)
		}
		q.do(t.Context(), "quit", nil, nil)
	})
	time.Sleep(200 * time.Millisecond)

	base := filepath.Join(dir, fi.base)
	if got := backingOf(t, filepath.Join(dir, "diffdisk")); got != fi.base {
		t.Errorf("the source's diffdisk backs on %q; want %q (relative)", got, fi.base)
	}
	if got := backingOf(t, base); got != "basedisk" {
		t.Errorf("the frozen base backs on %q; want basedisk (relative)", got)
	}
	checks := []struct {
		what, image, pattern string
		offset               int
	}{
		{"the source keeps the pre-fork write", filepath.Join(dir, "diffdisk"), "0xab", 0},
		{"the source keeps its later write under the name Lima opens", filepath.Join(dir, "diffdisk"), "0xcd", 64 << 10},
		{"the base holds the pre-fork write", base, "0xab", 0},
		{"the base never sees the source's later write", base, "0", 64 << 10},
	}
	for _, c := range checks {
		if !holds(t, c.image, c.pattern, c.offset) {
			t.Error(c.what)
		}
	}
	os.RemoveAll(dir) // limactl delete of the source
	if !holds(t, filepath.Join(child, "diffdisk"), "0xab", 0) || !holds(t, filepath.Join(child, "diffdisk"), "0", 64<<10) {
		t.Error("the child's disk, its source deleted, does not read the disk as it was at the fork")
	}
}

// A VM Lima does not run on QEMU cannot be forked: refused before
// anything is asked of it.
func TestAForkOfANonQEMUVMIsRefused(t *testing.T) {
	f := newFake(t)
	_, err := f.driver().SaveForFork(t.Context(), drivers.Spec{Name: "sbf-x", VMType: "vz"})
	var u *drivers.UnsupportedError
	if !errors.As(err, &u) {
		t.Fatalf("err = %v; want FORK_UNSUPPORTED", err)
	}
}

// A child of a fork can itself be forked once (what FORK_UNSUPPORTED
// advises for a source forked before): its QEMU, started from the saved
// memory and resumed, saves again and runs on, and the grandchild's disk
// reads what the child wrote before its own fork.
func TestAForksChildCanBeForked(t *testing.T) {
	f := newFake(t)
	home := t.TempDir()
	f.env["LIMA_HOME"], f.env["PATH"] = home, os.Getenv("PATH")
	d := f.driver()
	_, mon := realQEMUInstance(t, home, "sbf-src")
	writeGuestDisk(t, mon, "0xab", 0)
	img, err := d.SaveForFork(t.Context(), drivers.Spec{Name: "sbf-src", VMType: "qemu"})
	if err != nil {
		t.Fatal(err)
	}
	fi := img.(*forkImage)
	child := filepath.Join(home, "sbf-child")
	os.MkdirAll(child, 0o700)
	if err := fi.childDisk(t.Context(), child); err != nil {
		t.Fatal(err)
	}
	cmon := startQEMU(t, child, "-incoming", "exec:cat "+filepath.Join(fi.dir, fi.state))
	waitRunning(t, cmon, "sbf-child")
	writeGuestDisk(t, cmon, "0xcd", 64<<10) // the child's own write
	if _, err := d.SaveForFork(t.Context(), drivers.Spec{Name: "sbf-child", VMType: "qemu"}); err != nil {
		t.Fatalf("forking a child: %v", err)
	}
	cmon(func(q *qmp) {
		if st, err := q.status(t.Context()); err != nil || st != "running" {
			t.Errorf("the child after its own fork: %q %v; want running", st, err)
		}
	})
	bases, _ := filepath.Glob(filepath.Join(child, "fork-base-*.qcow2"))
	for _, b := range bases {
		if b != filepath.Join(child, fi.base) && holds(t, b, "0xcd", 64<<10) && holds(t, b, "0xab", 0) {
			return // the child's frozen disk: what it wrote and what it had from its source
		}
	}
	t.Errorf("no frozen disk of the child's fork holds its writes: %v", bases)
}

// A child's one script: the identity's failure is the script's; the egress
// settings' is said on stderr, and an egress script that ends early (its
// settings unchanged) ends only itself.
func TestAChildsScriptKeepsTheEgressFailureApart(t *testing.T) {
	run := func(identity, egress string) (string, int) {
		cmd := exec.Command("sh", "-c", childScript(identity, egress))
		var stderr strings.Builder
		cmd.Stderr = &stderr
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
		return stderr.String(), code
	}
	if said, code := run("set -e\necho id\n", "set -e\nfalse\necho not reached\n"); code != 0 ||
		!strings.Contains(said, egressFailed+" 1") {
		t.Errorf("a failed egress: exit %d, stderr %q; want exit 0 and %q", code, said, egressFailed+" 1")
	}
	if said, code := run("set -e\n", "set -e\n[ a = a ] && exit 0\nfalse\n"); code != 0 || said != "" {
		t.Errorf("an egress ending early: exit %d, stderr %q; want exit 0 and nothing said", code, said)
	}
	if _, code := run("set -e\nfalse\n", "true\n"); code == 0 {
		t.Error("a failed identity: exit 0; want the failure")
	}
}

// A child whose source's guest had its egress settings keeps them without
// running them again (several execs in a guest that has just come up); one
// whose source's settings are unknown or other is given them.
func TestAForkChildRunsOnlyTheEgressSettingsItsSourceLacked(t *testing.T) {
	_, d, _ := guestFixture(t)
	bin, said := t.TempDir(), filepath.Join(t.TempDir(), "scripts")
	// sudo -n sh -c SCRIPT, as the guest's: the script is kept, not run.
	os.WriteFile(filepath.Join(bin, "sudo"), []byte("#!/bin/sh\nprintf '%s\\n@@\\n' \"$4\" >> "+said+"\n"), 0o755)
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	allow := &drivers.Egress{Mode: "allowlist", Allow: []string{"example.test"}}
	child := drivers.ForkChild{Spec: drivers.Spec{Name: instance, Egress: allow}}
	os.MkdirAll(d.egressDir(instance), 0o700)
	for _, c := range []struct {
		source     string
		wantEgress bool
	}{{guestEgressScript(allow), false}, {egressUnknown, true}, {"", true}} {
		os.Remove(said)
		f := &forkImage{d: d, guestEgress: []byte(c.source)}
		if err := f.takeIdentity(t.Context(), child); err != nil {
			t.Fatal(err)
		}
		script, _ := os.ReadFile(said)
		if ran := strings.Contains(string(script), "sbf-egress"); ran != c.wantEgress || !strings.Contains(string(script),
			"/etc/machine-id") {
			t.Errorf("source's settings %q: the child's script ran the egress settings %v; want %v:\n%s",
				c.source, ran, c.wantEgress, script)
		}
		if marker, _ := os.ReadFile(d.guestEgressMarker(instance)); string(marker) != guestEgressScript(allow) {
			t.Errorf("source's settings %q: the child's marker holds %q; want its settings", c.source, marker)
		}
	}
}
