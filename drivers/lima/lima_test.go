package lima

import (
	"context"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sandboxforge/sbf/drivers"
)

var update = flag.Bool("update", false, "rewrite golden lima.yaml files")

type fake struct {
	t     *testing.T
	dir   string
	state string // sbf's state folder
	env   map[string]string
}

// newFake puts the fake limactl in charge; replies are files in dir.
func newFake(t *testing.T) *fake {
	dir := t.TempDir()
	t.Setenv("FAKE_LIMA_DIR", dir)
	qemuDir := t.TempDir()
	os.WriteFile(filepath.Join(qemuDir, "qemu-system-x86_64"), []byte("#!/bin/sh\n"), 0o755)
	return &fake{t: t, dir: dir, state: t.TempDir(), env: map[string]string{"PATH": qemuDir}}
}

func (f *fake) reply(cmd, stdout, stderr string, exit int) {
	os.WriteFile(filepath.Join(f.dir, cmd+".stdout"), []byte(stdout), 0o644)
	os.WriteFile(filepath.Join(f.dir, cmd+".stderr"), []byte(stderr), 0o644)
	os.WriteFile(filepath.Join(f.dir, cmd+".exit"), []byte(strconv.Itoa(exit)), 0o644)
}

// instanceDir is the instance's folder in a Lima home of the test's.
func (f *fake) instanceDir() string {
	if f.env["LIMA_HOME"] == "" {
		f.env["LIMA_HOME"] = f.t.TempDir()
	}
	dir := filepath.Join(f.env["LIMA_HOME"], instance)
	os.MkdirAll(dir, 0o700)
	return dir
}

func (f *fake) argv() []string {
	data, _ := os.ReadFile(filepath.Join(f.dir, "argv.log"))
	return strings.Split(strings.TrimSpace(string(data)), "\n")
}

func (f *fake) options() Options {
	abs, _ := filepath.Abs("testdata/fake-limactl")
	return Options{Limactl: abs, HostOS: "linux", HostArch: "amd64", Euid: func() int { return 1000 },
		Getenv: func(k string) string { return f.env[k] }, StateDir: f.state, Self: f.self()}
}

// self stands in for the sbf binary the QEMU wrapper runs: its egress-qemu
// execs QEMU as given (`egress-qemu CONFIG QEMU ARG…`).
func (f *fake) self() string {
	p := filepath.Join(f.state, "fake-sbf")
	if _, err := os.Stat(p); err != nil {
		os.MkdirAll(f.state, 0o755)
		os.WriteFile(p, []byte("#!/bin/sh\n[ \"$1\" = egress-qemu ] && shift 2 && exec \"$@\"\nexit 64\n"), 0o755)
	}
	return p
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

func TestAvailability(t *testing.T) {
	f := newFake(t)
	o := f.options()
	o.Euid = func() int { return 0 }
	if _, err := New(context.Background(), o); cause(err) != "running_as_root" ||
		!strings.Contains(err.Error(), "unprivileged user") {
		t.Errorf("as root: %v", err)
	}
	o = f.options()
	o.Limactl = filepath.Join(t.TempDir(), "limactl")
	if _, err := New(context.Background(), o); cause(err) != "backend_binary_missing" {
		t.Errorf("missing: %v", err)
	}
	os.WriteFile(o.Limactl, []byte("#!/bin/sh\n"), 0o644)
	if _, err := New(context.Background(), o); cause(err) != "backend_binary_not_executable" {
		t.Errorf("not executable: %v", err)
	}
	t.Setenv("FAKE_LIMA_VERSION", "0.23.2")
	f.state = t.TempDir() // the version is cached per binary; this "binary" changed its answer
	if _, err := New(context.Background(), f.options()); cause(err) != "backend_version_unsupported" {
		t.Errorf("old version: %v", err)
	}
	t.Setenv("FAKE_LIMA_VERSION", "1.2.1")
	f.state = t.TempDir()
	o = f.options()
	o.HostOS = "windows"
	os.Remove(filepath.Join(f.dir, "argv.log"))
	if _, err := New(context.Background(), o); cause(err) != "unsupported_host_os" {
		t.Errorf("windows: %v", err)
	}
	if _, err := os.Stat(filepath.Join(f.dir, "argv.log")); err == nil {
		t.Error("limactl was run on an unsupported host")
	}
	d := f.driver()
	if d.Version() != "1.2.1" {
		t.Errorf("version = %q", d.Version())
	}
	f.env["PATH"] = t.TempDir()
	err := d.Create(context.Background(), drivers.Spec{Name: "sbf-01234567-api", VMType: "qemu", Arch: "x86_64",
		Image: drivers.Image{Location: "/img/disk.img"}})
	if cause(err) != "host_vm_dependency_missing" {
		t.Errorf("qemu missing: %v", err)
	}
	f.env["QEMU_SYSTEM_X86_64"] = o.Limactl // any executable will do
	f.env["PATH"] = filepath.Dir(o.Limactl)
	os.Chmod(o.Limactl, 0o755)
	if err := d.Create(context.Background(), drivers.Spec{Name: "sbf-01234567-api", VMType: "qemu", Arch: "x86_64",
		Image: drivers.Image{Location: "/img/disk.img"}}); err != nil {
		t.Errorf("with QEMU_SYSTEM_X86_64: %v", err)
	}
}

const ndjson = `{"name":"sbf-01234567-api","hostname":"lima-sbf-01234567-api","status":"Running",` +
	`"dir":"/home/u/.lima/sbf-01234567-api","vmType":"qemu","arch":"x86_64","cpuType":"","cpus":2,` +
	`"memory":2147483648,"disk":10737418240,"sshLocalPort":41537,` +
	`"sshConfigFile":"/home/u/.lima/sbf-01234567-api/ssh.config","hostAgentPID":1234,"driverPID":1240,` +
	`"sshAddress":"127.0.0.1","protected":false,"limaVersion":"1.2.1"}` + "\n" +
	`{"name":"default","status":"Stopped","dir":"/home/u/.lima/default","vmType":"vz","arch":"aarch64",` +
	`"cpus":4,"memory":4294967296,"disk":107374182400,"protected":false,"limaVersion":"1.2.1"}` + "\n" +
	`{"name":"sbf-01234567-bad","status":"Broken","dir":"/home/u/.lima/sbf-01234567-bad","vmType":"qemu",` +
	`"arch":"x86_64","errors":[{}],"protected":false}` + "\n"

func TestListFormats(t *testing.T) {
	lines := strings.Split(strings.TrimSpace(ndjson), "\n")
	for name, out := range map[string]string{
		"ndjson":  ndjson,
		"array":   "[" + strings.Join(lines, ",") + "]\n",
		"wrapper": `{"instances": [` + strings.Join(lines, ",") + "]}\n",
	} {
		list, err := parseList([]byte(out))
		if err != nil || len(list) != 3 {
			t.Fatalf("%s: %v (%d instances)", name, err, len(list))
		}
		api, def, bad := list[0].instance(), list[1].instance(), list[2].instance()
		if api.Status != drivers.Running || api.SSH != "127.0.0.1:41537" || api.Reported.MemoryGiB != 2 ||
			api.Reported.DiskGiB != 10 || api.Reported.CPUs != 2 || api.Reported.Arch != "x86_64" {
			t.Errorf("%s: api = %+v", name, api)
		}
		if def.Status != drivers.Stopped || bad.Status != drivers.Broken || def.SSH != "" {
			t.Errorf("%s: default %+v, bad %+v", name, def, bad)
		}
	}
	_, err := parseList([]byte(lines[0] + "\n{\"name\": oops}\n"))
	if err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("malformed NDJSON: %v", err)
	}
	if list, err := parseList([]byte("\n")); err != nil || len(list) != 0 {
		t.Errorf("empty list: %v %v", list, err)
	}
	f := newFake(t)
	f.reply("list", ndjson, "", 0)
	insts, err := f.driver().List(context.Background())
	if err != nil || len(insts) != 2 || f.argv()[1] != "--tty=false list --json" { // not "default": sbf did not make it
		t.Errorf("List = %v, %v; argv %v", insts, err, f.argv())
	}
}

func TestLifecycleArgv(t *testing.T) {
	f := newFake(t)
	d := f.driver()
	ctx := context.Background()
	s := drivers.Spec{Name: "sbf-01234567-api", CPUs: 4, MemoryGiB: 4, DiskGiB: 30, VMType: "qemu", Arch: "x86_64",
		Image: drivers.Image{Location: "/img/disk.img"}, Ports: []string{"8080:80"}}
	d.Create(ctx, s)
	d.Start(ctx, s)
	d.Reconfigure(ctx, s)
	d.Stop(ctx, s.Name)
	d.ForceStop(ctx, s.Name)
	d.Delete(ctx, s.Name)
	want := []string{
		"--version",
		"--tty=false create --name sbf-01234567-api -",
		"--tty=false start --timeout 15m0s sbf-01234567-api",
		`--tty=false edit sbf-01234567-api --set .cpus = 4 | .memory = "4096MiB" | .disk = "30720MiB" | .mountType ` +
			`= "reverse-sshfs" | .mounts = [] | .portForwards = [{"guestPort":80,"hostIP":"127.0.0.1",` +
			`"hostPort":8080},{"guestIP":"0.0.0.0","proto":"any","ignore":true}]`,
		"--tty=false stop sbf-01234567-api",
		"--tty=false stop --force sbf-01234567-api",
		"--tty=false delete --force sbf-01234567-api",
	}
	if got := f.argv(); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("argv:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestUnknownInstanceIsNotFound(t *testing.T) {
	f := newFake(t)
	d := f.driver()
	f.reply("stop", "",
		`time="2026-11-25T12:00:00Z" level=fatal msg="stat /home/u/.lima/sbf-01234567-gone/lima.yaml: no such file or `+
			`directory"`+"\n", 1)
	if err := d.Stop(context.Background(), "sbf-01234567-gone"); !errors.Is(err, drivers.ErrNotFound) {
		t.Errorf("stop of an unknown instance: %v", err)
	}
	f.reply("start", "", "level=fatal msg=\"failed to start: exit status 1\"\n", 1)
	err := d.Start(context.Background(), drivers.Spec{Name: "sbf-01234567-x"})
	var ce *CommandError
	if errors.Is(err, drivers.ErrNotFound) || !errors.As(err, &ce) || ce.ExitCode != 1 {
		t.Errorf("a failed start: %v", err)
	}
}

// limactl's version is asked once per binary: later drivers read it from
// the cache until the binary changes.
func TestVersionIsCachedPerBinary(t *testing.T) {
	f := newFake(t)
	bin := filepath.Join(t.TempDir(), "limactl")
	src, _ := os.ReadFile("testdata/fake-limactl")
	os.WriteFile(bin, src, 0o755)
	o := f.options()
	o.Limactl = bin
	versionRuns := func() int { return strings.Count(strings.Join(f.argv(), "\n"), "--version") }
	for range 3 {
		if _, err := New(context.Background(), o); err != nil {
			t.Fatal(err)
		}
	}
	if n := versionRuns(); n != 1 {
		t.Errorf("limactl --version ran %d times for one binary", n)
	}
	later := time.Now().Add(time.Minute)
	os.Chtimes(bin, later, later) // an upgraded limactl
	t.Setenv("FAKE_LIMA_VERSION", "1.3.0")
	d, err := New(context.Background(), o)
	if err != nil || d.Version() != "1.3.0" || versionRuns() != 2 {
		t.Errorf("after the binary changed: version %v, %v, %d runs", d, err, versionRuns())
	}
}

// A limactl that ends without a word (an interrupt killed it) is said to
// have, never as "exit -1:" with nothing after the colon (issue 40); one
// that exits with nothing on stderr says "no output".
func TestAFailedLimactlIsNeverWordedEmpty(t *testing.T) {
	f := newFake(t)
	bin := filepath.Join(t.TempDir(), "limactl")
	os.WriteFile(bin, []byte("#!/bin/sh\n[ \"$1\" = --version ] && { echo 'limactl version 1.2.1'; exit 0; }\n"+
		"[ \"$2\" = list ] && kill -s INT $$\nexit 3\n"), 0o755)
	o := f.options()
	o.Limactl = bin
	d, err := New(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	_, err = d.List(context.Background())
	if err == nil || !strings.HasSuffix(err.Error(), ": killed by signal interrupt (no output)") {
		t.Errorf("a limactl killed by SIGINT: %v", err)
	}
	err = d.Stop(context.Background(), "sbf-01234567-x")
	if err == nil || !strings.Contains(err.Error(), "limactl stop") ||
		!strings.Contains(err.Error(), "exit 3 (no output)") {
		t.Errorf("a limactl that exits 3 silently: %v", err)
	}
}

// Inspect asks limactl about the named instances alone, and only those
// with a folder (limactl fails on a name it cannot match).
func TestInspectListsOnlyTheNamedInstancesThatExist(t *testing.T) {
	f := newFake(t)
	f.env["LIMA_HOME"] = t.TempDir()
	os.MkdirAll(filepath.Join(f.env["LIMA_HOME"], "sbf-01234567-api"), 0o755)
	f.reply("list", `{"name":"sbf-01234567-api","status":"Running","sshLocalPort":41537}`+"\n", "", 0)
	d := f.driver()
	insts, err := d.Inspect(context.Background(), []string{"sbf-01234567-api", "sbf-01234567-gone"})
	if err != nil || len(insts) != 1 || insts[0].SSH != "127.0.0.1:41537" || insts[0].Status != drivers.Running {
		t.Errorf("Inspect = %+v, %v", insts, err)
	}
	if got := f.argv(); got[len(got)-1] != "--tty=false list --json sbf-01234567-api" {
		t.Errorf("limactl was asked %q", got)
	}
	if insts, err := d.Inspect(context.Background(), []string{"sbf-01234567-gone"}); err != nil || len(insts) != 0 {
		t.Errorf("Inspect of a name without a folder = %+v, %v", insts, err)
	}
}
