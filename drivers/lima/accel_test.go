package lima

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sandboxforge/sbf/drivers"
)

// probeQEMU is a fake qemu-system-x86_64 for the KVM probe: `-cpu host`
// aborts as it does on nested hosts that refuse MSR 0x10a; a boot sector
// runs under any other model; a kernel boot does what kernelBody says.
func probeQEMU(t *testing.T, kernelBody string) (qemu, argsLog string) {
	dir := t.TempDir()
	body := `case " $* " in
*" -cpu host "*) echo "qemu: error: failed to set MSR 0x10a to 0x0" >&2; exit 1 ;;
*" -kernel "*) ` + kernelBody + ` ;;
*) exit 85 ;;
esac`
	return fakeQEMU(t, dir, body), filepath.Join(dir, "args.log")
}

// withProbeKernel gives the probe a kernel: a file with the x86 boot
// header where the host's kernels are looked for.
func withProbeKernel(t *testing.T) string {
	k := make([]byte, 0x300)
	copy(k[0x202:], "HdrS")
	p := filepath.Join(bootDir, "vmlinuz")
	if err := os.WriteFile(p, k, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func usableDevice(t *testing.T) {
	dev := filepath.Join(t.TempDir(), "kvm")
	os.WriteFile(dev, nil, 0o666)
	withKVM(t, dev)
}

// A host whose KVM refuses -cpu host but boots a kernel without
// arch-capabilities runs its VMs under KVM with that model: the start's
// wrapper turns Lima's `-cpu host,...` into it and keeps accel=kvm.
func TestKVMFallsBackToAModelWithoutArchCapabilities(t *testing.T) {
	usableDevice(t)
	kernel := withProbeKernel(t)
	qemu, argsLog := probeQEMU(t, `echo "`+strings.TrimSpace(probeMarker)+`"; exit 0`)
	f := newFake(t)
	f.env["PATH"] = filepath.Dir(qemu) + ":/usr/bin:/bin"
	d := f.driver()
	var said []string
	ctx := drivers.WithProgress(context.Background(), func(m string) { said = append(said, m) })
	if err := d.Start(ctx, qemuSpec); err != nil {
		t.Fatal(err)
	}
	probes, _ := os.ReadFile(argsLog)
	if !strings.Contains(string(probes), "-cpu host,-arch-capabilities") ||
		!strings.Contains(string(probes), "-kernel "+kernel) {
		t.Errorf("probes:\n%s", probes)
	}
	if len(said) != 1 || !strings.Contains(said[0], "checking whether KVM runs guests") {
		t.Errorf("progress = %q, want the probe announced once", said)
	}
	env, _ := os.ReadFile(filepath.Join(f.dir, "start.env"))
	if !strings.Contains(string(env), "SBF_QEMU_CPU=host,-arch-capabilities") ||
		strings.Contains(string(env), "SBF_QEMU_TCG") {
		t.Fatalf("start env:\n%s", env)
	}
	os.Remove(argsLog)
	wrapper := filepath.Join(f.state, "lima", "wrappers", "qemu-system")
	cmd := exec.Command(wrapper, "-machine", "q35,accel=kvm", "-cpu", "host,+aes", "-m", "2048")
	cmd.Env = append(os.Environ(), sbfVars(string(env))...)
	cmd.Env = append(cmd.Env, "SBF_EGRESS_CONFIG=") // QEMU directly, not through egress-qemu
	if out, err := cmd.CombinedOutput(); err != nil && cmd.ProcessState.ExitCode() != probeExit {
		t.Fatalf("wrapper: %v %s", err, out) // the fake QEMU exits as the probe's guest does
	}
	args, _ := os.ReadFile(argsLog)
	if got := strings.TrimSpace(string(args)); got != "-machine q35,accel=kvm -cpu host,-arch-capabilities,+aes -m 2048" {
		t.Errorf("real QEMU got %q", got)
	}
	a := d.detectAccel(ctx, qemu)
	if !a.Usable || a.CPU != "host,-arch-capabilities" || a.Kernel != kernel || len(a.Tried) != 1 ||
		!strings.Contains(a.Tried[0], "MSR 0x10a") {
		t.Errorf("accel = %+v", a)
	}
}

// A boot sector that runs is not enough: where the kernel never reaches
// user space under any model, VMs run in software emulation and the
// reason names every model tried.
func TestKVMIsTrustedOnlyWhenAKernelReachesUserSpace(t *testing.T) {
	usableDevice(t)
	withProbeKernel(t)
	old := kernelProbeTimeout
	kernelProbeTimeout = 300 * time.Millisecond
	t.Cleanup(func() { kernelProbeTimeout = old })
	qemu, _ := probeQEMU(t, "sleep 30")
	a := probeAccel(context.Background(), qemu, t.TempDir(), filepath.Join(bootDir, "vmlinuz"))
	if a.Usable || !strings.Contains(a.Reason, "-cpu host: QEMU with -accel kvm -cpu host failed") ||
		!strings.Contains(a.Reason, "-cpu host,-arch-capabilities: a Linux kernel (vmlinuz) did not reach user space") {
		t.Errorf("accel = %+v", a)
	}
}

// Without a kernel at hand, a fallback model is not trusted on a boot
// sector's word; once a kernel is there, the cached answer is asked again.
func TestAFallbackModelNeedsAKernel(t *testing.T) {
	usableDevice(t)
	qemu, _ := probeQEMU(t, `echo "`+strings.TrimSpace(probeMarker)+`"`)
	f := newFake(t)
	d := f.driver()
	if a := d.detectAccel(context.Background(), qemu); a.Usable || !strings.Contains(a.Reason, "no Linux kernel") {
		t.Errorf("without a kernel: %+v", a)
	}
	withProbeKernel(t)
	if a := d.detectAccel(context.Background(), qemu); !a.Usable || a.CPU != "host,-arch-capabilities" {
		t.Errorf("with a kernel: %+v", a)
	}
}

// The probe's initramfs is real: a real kernel under a real QEMU (software
// emulation) runs its /init, which prints the marker and ends QEMU.
func TestProbeInitRunsUnderARealKernel(t *testing.T) {
	qemu, err := exec.LookPath("qemu-system-x86_64")
	if err != nil {
		t.Skip("qemu-system-x86_64 not installed (scripts/host-deps.sh installs it)")
	}
	kernels, _ := filepath.Glob("/var/cache/sandboxforge/images/*/vmlinuz")
	if len(kernels) == 0 || !isBzImage(kernels[0]) {
		t.Skip("no guest kernel in /var/cache/sandboxforge/images (make run builds one)")
	}
	if ok, reason := kernelProbe(context.Background(), qemu, kernels[0], t.TempDir(), 2*time.Minute,
		"-accel", "tcg"); !ok {
		t.Fatalf("the probe's /init did not run: %s", reason)
	}
}

// sbf doctor says which model KVM runs with, how that was shown and what
// failed before it.
func TestDoctorSaysWhatTheProbeTried(t *testing.T) {
	got := accelDetail(Accel{Usable: true, CPU: "host,-arch-capabilities", Kernel: "/boot/vmlinuz",
		Tried: []string{"-cpu host: QEMU failed (MSR 0x10a)"}})
	want := "KVM runs guests with -cpu host,-arch-capabilities (a Linux kernel, /boot/vmlinuz, reached user space); " +
		"tried first: -cpu host: QEMU failed (MSR 0x10a)"
	if got != want {
		t.Errorf("detail = %q\nwant     %q", got, want)
	}
}
