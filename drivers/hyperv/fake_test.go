package hyperv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/drivers/hyperv/internal/fakehv"
	"github.com/sandboxforge/sbf/drivers/sshexec/sshtest"
)

// fakePowerShell is the fake powershell, built once for the package's
// tests (internal/fakehv/powershell).
var fakePowerShell string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "sbf-fake-powershell-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fakePowerShell = filepath.Join(dir, "powershell")
	if out, err := exec.Command("go", "build", "-o", fakePowerShell,
		"./internal/fakehv/powershell").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building the fake powershell: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// fake is a pretend Windows host: a world for the fake powershell, a base
// image, and an SSH server standing in for every VM's sshd.
type fake struct {
	t     *testing.T
	dir   string
	base  string
	guest *sshtest.Server
}

func newFake(t *testing.T) *fake {
	t.Helper()
	// The fake powershell's main is no part of this test binary: opened, it is in go test's key.
	if f, err := os.Open("internal/fakehv/powershell/main.go"); err == nil {
		f.Close()
	}
	f := &fake{t: t, dir: t.TempDir(), guest: sshtest.Start(t)}
	t.Setenv("FAKE_HYPERV_DIR", f.dir)
	f.base = filepath.Join(t.TempDir(), "base.vhdx")
	if err := fakehv.WriteVHD(f.base, 8*gibBytes); err != nil {
		t.Fatal(err)
	}
	f.save(fakehv.Healthy())
	return f
}

func (f *fake) world() fakehv.World {
	f.t.Helper()
	w, err := fakehv.Load(f.dir)
	if err != nil {
		f.t.Fatal(err)
	}
	return w
}

func (f *fake) save(w fakehv.World) {
	f.t.Helper()
	if err := fakehv.Save(f.dir, w); err != nil {
		f.t.Fatal(err)
	}
}

// reply makes the fake answer op with canned output instead of acting.
func (f *fake) reply(op, stdout, stderr string, exit int) {
	os.WriteFile(filepath.Join(f.dir, op+".stdout"), []byte(stdout), 0o644)
	os.WriteFile(filepath.Join(f.dir, op+".stderr"), []byte(stderr), 0o644)
	os.WriteFile(filepath.Join(f.dir, op+".exit"), []byte(fmt.Sprint(exit)), 0o644)
}

func (f *fake) calls() []fakehv.Call {
	f.t.Helper()
	calls, err := fakehv.Calls(f.dir)
	if err != nil {
		f.t.Fatal(err)
	}
	return calls
}

func (f *fake) options() Options {
	return Options{PowerShell: fakePowerShell, HostOS: "windows", HostArch: "amd64",
		Getenv: func(string) string { return "" }, BaseVHDX: f.base, StorageDir: filepath.Join(f.dir, "disks"),
		SSHKey: f.guest.KeyFile, SSHPort: f.guest.Port, PollInterval: time.Millisecond, BootTimeout: 10 * time.Second}
}

func (f *fake) driver() *Driver {
	f.t.Helper()
	d, err := New(context.Background(), f.options())
	if err != nil {
		f.t.Fatal(err)
	}
	return d
}

func cause(err error) string {
	var u *drivers.UnavailableError
	if errors.As(err, &u) {
		return u.ProbableCause
	}
	return ""
}

// spec is a spec Hyper-V can honour.
func spec(name string) drivers.Spec {
	return drivers.Spec{Name: name, CPUs: 2, MemoryGiB: 2, DiskGiB: 10, Arch: "x86_64", Template: "template:docker"}
}
