package lima

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/sandboxforge/sbf/internal/proc"
	"io/fs"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strings"
	"time"

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
}

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
// earlier answer for the same boot of the host and the same QEMU.
func (d *Driver) detectAccel(ctx context.Context, qemu string) Accel {
	cacheFile := filepath.Join(d.opts.StateDir, "lima", "accel.json")
	bootID := readBootID()
	var cached Accel
	if b, err := os.ReadFile(cacheFile); err == nil && json.Unmarshal(b, &cached) == nil &&
		cached.BootID == bootID && cached.QEMU == qemu && bootID != "" {
		return cached
	}
	a := probeAccel(ctx, qemu, filepath.Join(d.opts.StateDir, "lima"))
	a.BootID, a.QEMU = bootID, qemu
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

// probeAccel checks the device, then boots bootSector under KVM.
func probeAccel(ctx context.Context, qemu, workDir string) Accel {
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
	if ok, reason := bootProbe(ctx, qemu, workDir, probeTimeout, "-accel", "kvm", "-cpu", "host"); !ok {
		return Accel{Reason: reason}
	}
	return Accel{Usable: true}
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
