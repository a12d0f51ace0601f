package lima

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strings"
	"time"

	"github.com/sandboxforge/sbf/internal/proc"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/internal/atomicfile"
)

// Accel is whether QEMU can use the host's hardware virtualization (KVM),
// decided by trying it, and why not.
type Accel struct {
	BootID string `json:"boot_id"`
	QEMU   string `json:"qemu"`
	Usable bool   `json:"usable"`
	Reason string `json:"reason,omitempty"`
	// Fix is what would make KVM usable, when sbf can tell.
	Fix string `json:"fix,omitempty"`
	// CPU is the QEMU CPU model KVM ran a guest with, when Usable.
	CPU string `json:"cpu,omitempty"`
	// Kernel is the Linux kernel the probe booted ("" when none was at
	// hand, so only a boot sector ran); Tried, what failed before.
	Kernel string   `json:"kernel,omitempty"`
	Tried  []string `json:"tried,omitempty"`
}

// cpuModels are the CPU models tried under KVM, in order: the host's own,
// then the host's without IA32_ARCH_CAPABILITIES, an MSR that some nested
// hosts refuse to set (QEMU aborts: "failed to set MSR 0x10a").
var cpuModels = []string{"host", "host,-arch-capabilities"}

// kvmDevice is a variable so tests can point it at a file of their own.
var kvmDevice = "/dev/kvm"

// bootSector is a 512-byte disk whose code writes 0x2a to QEMU's
// isa-debug-exit port, so QEMU exits with status (0x2a<<1)|1 = 85 as
// soon as the guest runs its first instructions. A host whose KVM
// cannot run guests (nested virtualization that spins, a KVM that
// refuses the CPU's MSRs) never gets there.
var bootSector = func() []byte {
	b := make([]byte, 512)
	copy(b, []byte{
		0xb0, 0x2a, // mov al, 0x2a
		0xe6, 0xf4, // out 0xf4, al
		0xf4,       // hlt
		0xeb, 0xfd, // jmp back to hlt
	})
	b[510], b[511] = 0x55, 0xaa
	return b
}()

const probeExit = 85

// probeTimeout bounds the KVM trial: a working KVM answers in well under
// a second; a broken one hangs.
const probeTimeout = 8 * time.Second

// detectAccel decides whether QEMU at path can use KVM, trusting an
// earlier answer for the same boot of the host and the same QEMU (unless
// that answer had no kernel to boot and one is at hand now).
func (d *Driver) detectAccel(ctx context.Context, qemu string) Accel {
	cacheFile := filepath.Join(d.opts.StateDir, "lima", "accel.json")
	bootID := readBootID()
	kernel := d.probeKernel()
	var cached Accel
	if b, err := os.ReadFile(cacheFile); err == nil && json.Unmarshal(b, &cached) == nil &&
		cached.BootID == bootID && cached.QEMU == qemu && bootID != "" && (cached.Kernel != "" || kernel == "") {
		return cached
	}
	a := probeAccel(ctx, qemu, filepath.Join(d.opts.StateDir, "lima"), kernel)
	a.BootID, a.QEMU, a.Kernel = bootID, qemu, kernel
	if b, err := json.MarshalIndent(a, "", "  "); err == nil && d.opts.StateDir != "" {
		if os.MkdirAll(filepath.Dir(cacheFile), 0o755) == nil {
			_ = atomicfile.WriteFile(cacheFile, append(b, '\n'), 0o644) // only a cache
		}
	}
	return a
}

func readBootID() string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// probeAccel checks the device, then tries each CPU model under KVM: a
// boot sector first (fast to fail), then the kernel, when there is one.
// Without a kernel only the host's own model is trusted, on the boot
// sector's word, as before the kernel probe: a fallback model exists for
// hosts that are known to need the stronger proof.
func probeAccel(ctx context.Context, qemu, workDir, kernel string) Accel {
	f, err := os.OpenFile(kvmDevice, os.O_RDWR, 0)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return Accel{
			Reason: "no " + kvmDevice + ": hardware virtualization is off in the firmware, or not passed to this machine",
		}
	case errors.Is(err, fs.ErrPermission):
		return Accel{Reason: "cannot open " + kvmDevice + ": permission denied", Fix: kvmGroupFix()}
	case err != nil:
		return Accel{Reason: fmt.Sprintf("cannot open %s: %v", kvmDevice, err)}
	}
	f.Close()
	drivers.Progressf(ctx, "checking whether KVM runs guests here (once per boot of this host, at most %s)",
		time.Duration(len(cpuModels))*(probeTimeout+kernelProbeTimeout))
	var tried []string
	for i, model := range cpuModels {
		kvm := []string{"-accel", "kvm", "-cpu", model}
		ok, why := bootProbe(ctx, qemu, workDir, probeTimeout, kvm...)
		switch {
		case ok && kernel != "":
			ok, why = kernelProbe(ctx, qemu, kernel, workDir, kernelProbeTimeout, kvm...)
		case ok && i > 0:
			ok, why = false, "a boot sector ran, but no Linux kernel was at hand to show that one boots"
		}
		if ok {
			return Accel{Usable: true, CPU: model, Tried: tried}
		}
		tried = append(tried, "-cpu "+model+": "+why)
	}
	return Accel{Reason: strings.Join(tried, "; "), Tried: tried}
}

// osRelease and bootDir are variables so tests can point them elsewhere.
var osRelease, bootDir = "/proc/sys/kernel/osrelease", "/boot"

// probeKernel is an x86 Linux kernel the KVM probe can boot: the host's
// own, else one an instance of this driver boots; "" when there is none.
func (d *Driver) probeKernel() string {
	var candidates []string
	if rel, err := os.ReadFile(osRelease); err == nil {
		candidates = append(candidates, filepath.Join(bootDir, "vmlinuz-"+strings.TrimSpace(string(rel))))
	}
	candidates = append(candidates, filepath.Join(bootDir, "vmlinuz"))
	if home := limaHome(d.opts.Getenv); home != "" {
		found, _ := filepath.Glob(filepath.Join(home, "*", "kernel"))
		candidates = append(candidates, found...)
	}
	for _, c := range candidates {
		if isBzImage(c) {
			return c
		}
	}
	return ""
}

// isBzImage tells an x86 kernel (the "HdrS" boot protocol header at
// 0x202) from another arch's, which an x86 QEMU cannot boot.
func isBzImage(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	magic := make([]byte, 4)
	_, err = f.ReadAt(magic, 0x202)
	return err == nil && string(magic) == "HdrS"
}

// bootProbe boots bootSector with QEMU and the given accelerator flags;
// ok when the guest ran, else why not.
func bootProbe(
	ctx context.Context,
	qemu, workDir string,
	timeout time.Duration,
	accel ...string,
) (ok bool, reason string) {
	if err := os.MkdirAll(workDir, 0o755); err != nil {
		workDir = os.TempDir()
	}
	img, err := os.CreateTemp(workDir, "kvm-probe-*.img")
	if err != nil {
		return false, fmt.Sprintf("cannot write the KVM probe: %v", err)
	}
	defer os.Remove(img.Name())
	_, err = img.Write(bootSector)
	img.Close()
	if err != nil {
		return false, fmt.Sprintf("cannot write the KVM probe: %v", err)
	}
	pctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	args := append(accel, "-m", "16", "-nodefaults", "-display", "none", "-no-reboot",
		"-device", "isa-debug-exit,iobase=0xf4,iosize=0x04", "-drive", "file="+img.Name()+",format=raw,if=ide")
	cmd := proc.Command(pctx, qemu, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cmd.WaitDelay = time.Second // a wrapper's children must not hold the probe open
	err = cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit) && exit.ExitCode() == probeExit:
		return true, ""
	case pctx.Err() != nil:
		return false, fmt.Sprintf("a KVM guest did not run within %s (nested virtualization that hangs)", timeout)
	}
	msg := strings.TrimSpace(stderr.String())
	if i := strings.IndexByte(msg, '\n'); i > 0 {
		msg = msg[:i]
	}
	return false, fmt.Sprintf("QEMU with %s failed (%v: %s)", strings.Join(accel, " "), err, msg)
}

// kvmGroupFix names the group that may open /dev/kvm, when it has one.
func kvmGroupFix() string {
	info, err := os.Stat(kvmDevice)
	if err != nil {
		return ""
	}
	gid, ok := groupOf(info)
	if !ok || info.Mode().Perm()&0o060 == 0 {
		return "ask an administrator to make " + kvmDevice + " usable by your user (usually group kvm, mode 0660)"
	}
	g, err := user.LookupGroupId(fmt.Sprint(gid))
	if err != nil {
		return ""
	}
	who := "$USER"
	if u, err := user.Current(); err == nil {
		who = u.Username
	}
	return fmt.Sprintf("sudo usermod -aG %s %s, then log in again", g.Name, who)
}
