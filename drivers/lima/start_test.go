package lima

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/egress"
)

// withKVM points the driver's KVM device at path for one test, and the
// host's kernels at an empty folder (a test gives the probe a kernel itself).
func withKVM(t *testing.T, path string) {
	old, oldBoot := kvmDevice, bootDir
	kvmDevice, bootDir = path, t.TempDir()
	t.Cleanup(func() { kvmDevice, bootDir = old, oldBoot })
}

// fakeQEMU is a qemu-system-x86_64 that exits with code, after printing
// its arguments to args.log beside it.
func fakeQEMU(t *testing.T, dir, body string) string {
	p := filepath.Join(dir, "qemu-system-x86_64")
	os.WriteFile(p, []byte("#!/bin/sh\necho \"$@\" >> \""+dir+"/args.log\"\n"+body+"\n"), 0o755)
	return p
}

var qemuSpec = drivers.Spec{Name: "sbf-01234567-api", CPUs: 1, MemoryGiB: 1, DiskGiB: 5, VMType: "qemu", Arch: "x86_64"}

// Without usable KVM, start runs Lima with sbf's QEMU wrapper (which
// turns Lima's accel=kvm into software emulation) and says so once.
func TestStartUnderEmulation(t *testing.T) {
	withKVM(t, filepath.Join(t.TempDir(), "kvm")) // no such device
	f := newFake(t)
	qemuDir := t.TempDir()
	realQEMU := fakeQEMU(t, qemuDir, "exit 0")
	f.env["PATH"] = qemuDir + ":/usr/bin:/bin"
	// Lima says what it waits for again and again; sbf passes it on once per start.
	waiting := `time="x" level=info msg="[hostagent] Waiting for the essential requirement 1 of 2: \"ssh\""` + "\n"
	f.reply("start", "", waiting+waiting+waiting, 0)
	d := f.driver()
	var said []string
	ctx := drivers.WithProgress(context.Background(), func(m string) { said = append(said, m) })
	for range 2 {
		if err := d.Start(ctx, qemuSpec); err != nil {
			t.Fatal(err)
		}
	}
	if len(said) != 3 || !strings.Contains(said[0], "software emulation") ||
		!strings.Contains(said[0], "no "+kvmDevice) ||
		said[1] != `lima: Waiting for the essential requirement 1 of 2: "ssh"` || said[2] != said[1] {
		t.Errorf("progress = %q (want one note naming the cause)", said)
	}
	env, _ := os.ReadFile(filepath.Join(f.dir, "start.env"))
	wrapper := filepath.Join(f.state, "lima", "wrappers", "qemu-system")
	if !strings.Contains(string(env), "QEMU_SYSTEM_X86_64="+wrapper) ||
		!strings.Contains(string(env), "SBF_REAL_QEMU="+realQEMU) ||
		!strings.Contains(string(env), "PATH="+filepath.Join(f.state, "lima", "wrappers", "bin")+":") {
		t.Fatalf("start env:\n%s", env)
	}
	// The wrapper itself, in the environment limactl got: Lima's KVM flags
	// become TCG ones for the real QEMU.
	cmd := exec.Command(wrapper, "-machine", "q35,accel=kvm", "-cpu", "host,+aes", "-enable-kvm", "-m", "2048")
	cmd.Env = append(os.Environ(), sbfVars(string(env))...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("wrapper: %v %s", err, out)
	}
	args, _ := os.ReadFile(filepath.Join(qemuDir, "args.log"))
	if got := strings.TrimSpace(string(args)); got != "-machine q35,accel=tcg -cpu max,+aes -m 2048" {
		t.Errorf("real QEMU got %q", got)
	}
}

func TestEmulationNeverFailsWithGuidance(t *testing.T) {
	withKVM(t, filepath.Join(t.TempDir(), "kvm"))
	f := newFake(t)
	d := f.driver()
	s := qemuSpec
	s.Emulation = "never"
	err := d.Start(context.Background(), s)
	var u *drivers.UnavailableError
	if !errors.As(err, &u) || u.ProbableCause != "hardware_virtualization_unavailable" ||
		!strings.Contains(err.Error(), `emulation = "auto"`) {
		t.Fatalf("err = %v", err)
	}
	if strings.Contains(strings.Join(f.argv(), "\n"), "start") {
		t.Error("limactl start ran although the VM could not start")
	}
}

// A KVM that works is used as is: no emulation, no note; the wrapper
// still starts QEMU, under its host guard.
func TestUsableKVMNeedsNoWrapper(t *testing.T) {
	dev := filepath.Join(t.TempDir(), "kvm")
	os.WriteFile(dev, nil, 0o666)
	withKVM(t, dev)
	f := newFake(t)
	qemuDir := t.TempDir()
	fakeQEMU(t, qemuDir, "exit 85") // the probe guest ran
	f.env["PATH"] = qemuDir + ":/usr/bin:/bin"
	d := f.driver()
	var said []string
	ctx := drivers.WithProgress(context.Background(), func(m string) { said = append(said, m) })
	if err := d.Start(ctx, qemuSpec); err != nil {
		t.Fatal(err)
	}
	env, _ := os.ReadFile(filepath.Join(f.dir, "start.env"))
	if !strings.Contains(string(env), "SBF_EGRESS_CONFIG=") || strings.Contains(string(env), "SBF_QEMU_TCG") ||
		strings.Contains(string(env), "SBF_QEMU_CPU") ||
		len(said) != 1 || !strings.Contains(said[0], "checking whether KVM") {
		t.Errorf("env %s, progress %q", env, said)
	}
	launch, err := egress.ReadLaunchConfig(filepath.Join(f.state, "lima", "egress", qemuSpec.Name, "launch.json"))
	if err != nil || launch.Egress != "allow" || len(launch.GuestHostPorts) != 0 {
		t.Errorf("launch config of a VM without a policy: %+v %v", launch, err)
	}
	probe, _ := os.ReadFile(filepath.Join(qemuDir, "args.log"))
	if !strings.Contains(string(probe), "-accel kvm -cpu host") || !strings.Contains(string(probe), "isa-debug-exit") {
		t.Errorf("probe args: %s", probe)
	}
	// The answer is cached for this boot of the host: no second probe.
	d2 := f.driver()
	d2.Start(ctx, qemuSpec)
	if again, _ := os.ReadFile(filepath.Join(qemuDir, "args.log")); string(again) != string(probe) {
		t.Errorf("probed again:\n%s", again)
	}
}

func TestBootProbeOutcomes(t *testing.T) {
	dir := t.TempDir()
	hang := fakeQEMU(t, dir, "sleep 30")
	if ok, reason := bootProbe(context.Background(), hang, dir, 300*time.Millisecond, "-accel", "kvm"); ok ||
		!strings.Contains(reason, "did not run within") {
		t.Errorf("hang: %v %q", ok, reason)
	}
	failDir := t.TempDir()
	fails := fakeQEMU(t, failDir, "echo 'failed to set MSR 0x10a' >&2; exit 134")
	if ok, reason := bootProbe(context.Background(), fails, dir, 5*time.Second, "-accel", "kvm"); ok ||
		!strings.Contains(reason, "MSR") {
		t.Errorf("fails: %v %q", ok, reason)
	}
}

// The probe's boot sector really runs: a real QEMU under software
// emulation exits with the probe's code.
func TestBootSectorRunsInRealQEMU(t *testing.T) {
	qemu, err := exec.LookPath("qemu-system-x86_64")
	if err != nil {
		t.Skip("qemu-system-x86_64 not installed (scripts/host-deps.sh installs it)")
	}
	if ok, reason := bootProbe(context.Background(), qemu, t.TempDir(), 30*time.Second, "-accel", "tcg"); !ok {
		t.Fatalf("the probe guest did not run under TCG: %s", reason)
	}
}

func TestLimaProgressLines(t *testing.T) {
	for line, want := range map[string]string{
		`time="2026-11-26T06:00:00Z" level=info msg="[hostagent] Waiting for the essential requirement 1 of 2: ` +
			`\"ssh\""`: `lima: Waiting for the essential requirement 1 of 2: "ssh"`,
		`time="2026-11-26T06:00:00Z" level=info msg="READY. Run ` + "`limactl shell x`" +
			` to open the shell."`: "lima: READY. Run `limactl shell x` to open the shell.",
		`time="2026-11-26T06:00:00Z" level=warning msg="[hostagent] DEGRADED"`:                    "lima warning: DEGRADED",
		`time="2026-11-26T06:00:00Z" level=info msg="[hostagent] hostagent socket created at /x"`: "",
		`not a log line`: "",
		`time="2026-11-26T06:00:00Z" level=warning msg="guest agent events closed unexpectedly" error="EOF"`: "lima: " +
			"the guest agent does not answer yet (guest agent events closed unexpectedly); Lima asks again every " +
			"10 s, which is normal while the guest boots",
	} {
		got, ok := limaProgress(line)
		if got != want || ok != (want != "") {
			t.Errorf("%s\n  → %q %v, want %q", line, got, ok, want)
		}
	}
}

// A failed boot names the serial console and the host agent's log.
func TestBootFailureNamesTheLogs(t *testing.T) {
	f := newFake(t)
	home := t.TempDir()
	f.env["LIMA_HOME"] = home
	os.MkdirAll(filepath.Join(home, qemuSpec.Name), 0o755)
	os.WriteFile(filepath.Join(home, qemuSpec.Name, "ha.stderr.log"),
		[]byte(`{"msg":"Could not access KVM kernel module"}`), 0o644)
	f.reply("start", "", `time="x" level=fatal msg="exiting, status={Running:false Degraded:false Exiting:true}"`+
		"\n", 1)
	f.env["QEMU_SYSTEM_X86_64"] = "/usr/bin/qemu-system-x86_64" // chosen by the user: no probe
	f.env["PATH"] = "/usr/bin:/bin"
	err := f.driver().Start(context.Background(), qemuSpec)
	if err == nil || !strings.Contains(err.Error(), filepath.Join(home, qemuSpec.Name, "serial.log")) ||
		!strings.Contains(err.Error(), `emulation = "always"`) {
		t.Fatalf("err = %v", err)
	}
}

// A boot that only missed Lima's minute for the guest agent is a running
// VM with a warning; any other DEGRADED end stays a failure.
func TestLateGuestAgentIsAWarning(t *testing.T) {
	f := newFake(t)
	f.env["QEMU_SYSTEM_X86_64"] = "/usr/bin/qemu-system-x86_64"
	f.env["PATH"] = "/usr/bin:/bin"
	degraded := `time="x" level=info msg="[hostagent] The final requirement 1 of 1 is satisfied"
time="x" level=error msg="[guest agent does not seem to be running; port forwards will not work]"
time="x" level=warning msg="DEGRADED. The VM seems running, but file sharing and port forwarding may not work."
time="x" level=fatal msg="degraded, status={Running:true Degraded:true Exiting:false}"
`
	f.reply("start", "", degraded, 1)
	f.reply("list", `{"name":"sbf-01234567-api","status":"Running"}`+"\n", "", 0)
	var said []string
	ctx := drivers.WithProgress(context.Background(), func(m string) { said = append(said, m) })
	if err := f.driver().Start(ctx, qemuSpec); err != nil {
		t.Fatalf("a late guest agent failed the start: %v", err)
	}
	if len(said) == 0 || !strings.Contains(said[len(said)-1], "guest agent did not answer") {
		t.Errorf("progress = %q", said)
	}
	f.reply("list", `{"name":"sbf-01234567-api","status":"Stopped"}`+"\n", "", 0)
	if err := f.driver().Start(ctx, qemuSpec); err == nil {
		t.Error("a degraded start of a VM that is not running succeeded")
	}
	f.reply("start", "", strings.Replace(degraded, "level=info", "level=error", 1), 1)
	f.reply("list", `{"name":"sbf-01234567-api","status":"Running"}`+"\n", "", 0)
	if err := f.driver().Start(ctx, qemuSpec); err == nil {
		t.Error("a start with another error succeeded")
	}
}

// sbfVars are the SBF_ variables of a recorded environment.
func sbfVars(env string) []string {
	var out []string
	for _, line := range strings.Split(env, "\n") {
		if strings.HasPrefix(line, "SBF_") {
			out = append(out, line)
		}
	}
	return out
}

// A VM with a network policy starts through the wrapper even where KVM
// works: the wrapper hands QEMU's command line, untouched, to sbf's
// egress-qemu with the instance's launch config.
func TestANetworkPolicyStartsQEMUThroughEgressQEMU(t *testing.T) {
	dev := filepath.Join(t.TempDir(), "kvm")
	os.WriteFile(dev, nil, 0o666)
	withKVM(t, dev)
	f := newFake(t)
	qemuDir := t.TempDir()
	realQEMU := fakeQEMU(t, qemuDir, "exit 85")
	f.env["PATH"] = qemuDir + ":/usr/bin:/bin"
	f.env["SBF_EGRESS_HOSTS"] = "Allowed.Test=127.0.0.1, other.test=::1"
	self := filepath.Join(t.TempDir(), "sbf")
	os.WriteFile(self, []byte("#!/bin/sh\necho \"$@\" > \""+self+".log\"\n"), 0o755)
	d := f.driver()
	d.opts.Self = self
	d.opts.GuestHostPorts = []int{5432}
	s := qemuSpec
	s.Egress = &drivers.Egress{Mode: "allowlist", Allow: []string{"allowed.test"}}
	if err := d.Start(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	env, _ := os.ReadFile(filepath.Join(f.dir, "start.env"))
	launch := filepath.Join(f.state, "lima", "egress", s.Name, "launch.json")
	if !strings.Contains(string(env), "SBF_EGRESS_CONFIG="+launch) || strings.Contains(string(env), "SBF_QEMU_TCG") {
		t.Fatalf("start env:\n%s", env)
	}
	c, err := egress.ReadLaunchConfig(launch)
	if err != nil || c.Egress != "allowlist" || c.Sandbox != "api" || c.ProxyCommand[0] != self ||
		len(c.GuestHostPorts) != 1 || c.GuestHostPorts[0] != 5432 ||
		strings.Join(c.Hosts["allowed.test"], ",") != "127.0.0.1" || c.Hosts["other.test"][0] != "::1" {
		t.Fatalf("launch config = %+v, %v", c, err)
	}
	cmd := exec.Command(filepath.Join(f.state, "lima", "wrappers", "qemu-system"), "-machine", "q35,accel=kvm")
	cmd.Env = append(os.Environ(), sbfVars(string(env))...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("wrapper: %v %s", err, out)
	}
	got, _ := os.ReadFile(self + ".log")
	want := "egress-qemu " + launch + " " + realQEMU + " -machine q35,accel=kvm"
	if strings.TrimSpace(string(got)) != want {
		t.Errorf("the wrapper ran sbf with %q, want %q", got, want)
	}
	s.VMType = "vz"
	if err := d.EnforceEgress(context.Background(), s); err == nil || !strings.Contains(err.Error(), "vm_type") {
		t.Errorf("vz: %v, want a refusal", err)
	}
}

// A QEMU the user named, with words of its own, keeps them behind the
// wrapper every VM now starts through (Lima passes them first).
func TestTheUsersQEMUKeepsItsArguments(t *testing.T) {
	f := newFake(t)
	f.env["PATH"] = "/usr/bin:/bin"
	f.env["QEMU_SYSTEM_X86_64"] = "/opt/qemu/bin/qemu-system-x86_64 -machine q35,accel=tcg"
	if err := f.driver().Start(context.Background(), qemuSpec); err != nil {
		t.Fatal(err)
	}
	env, _ := os.ReadFile(filepath.Join(f.dir, "start.env"))
	wrapper := filepath.Join(f.state, "lima", "wrappers", "qemu-system")
	if !strings.Contains(string(env), "QEMU_SYSTEM_X86_64="+wrapper+" -machine q35,accel=tcg\n") ||
		!strings.Contains(string(env), "SBF_REAL_QEMU=/opt/qemu/bin/qemu-system-x86_64\n") {
		t.Errorf("start env:\n%s", env)
	}
}
