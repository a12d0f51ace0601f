package vz

import (
	"crypto/sha256"
	"fmt"
	"math"
	"net"
	"strings"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/drivers/vz/internal/layout"
)

const (
	mib = 1 << 20
	gib = 1 << 30
	// guestUser is the account cloud-init creates from the seed; sbf logs
	// in as it with the instance's own key.
	guestUser = "sbf"
)

// translate turns a spec into the instance's configuration; cmdline is the
// image's kernel command line (the spec's, when it sets one, wins).
func translate(s drivers.Spec, cmdline string, hasInitrd bool) (layout.Config, error) {
	if s.CPUs < 1 {
		return layout.Config{}, fmt.Errorf("cpus must be at least 1, not %d", s.CPUs)
	}
	if s.MemoryGiB <= 0 || s.DiskGiB <= 0 {
		return layout.Config{}, fmt.Errorf("memory_gib and disk_gib must be positive")
	}
	if s.Image.KernelCmdline != "" {
		cmdline = s.Image.KernelCmdline
	}
	return layout.Config{
		Spec:        s,
		CPUs:        uint(s.CPUs),
		MemoryBytes: roundMiB(s.MemoryGiB),
		CmdLine:     consoleCmdline(cmdline),
		MAC:         macFor(s.Name).String(),
		User:        guestUser,
		HasInitrd:   hasInitrd,
	}, nil
}

// roundMiB converts GiB to bytes, rounded to whole MiB: the framework wants
// memory in MiB multiples, and fractional GiB are allowed in specs.
func roundMiB(giB float64) uint64 {
	return uint64(math.Round(giB*1024)) * mib
}

// consoleCmdline points the kernel's console at the virtio console: the
// images sbf builds for Lima's QEMU say console=ttyS0, which under
// Virtualization.framework is no device at all, so the boot log would be
// lost.
func consoleCmdline(cmdline string) string {
	var out []string
	hvc := false
	for _, f := range strings.Fields(cmdline) {
		if v, ok := strings.CutPrefix(f, "console="); ok && (strings.HasPrefix(v, "ttyS") || strings.HasPrefix(v, "ttyAMA")) {
			f = "console=hvc0"
		}
		if f == "console=hvc0" {
			if hvc {
				continue
			}
			hvc = true
		}
		out = append(out, f)
	}
	if !hvc {
		out = append(out, "console=hvc0")
	}
	return strings.Join(out, " ")
}

// macFor derives a stable, locally administered unicast MAC from the
// instance name: the guest's DHCP lease (and so its address) follows the
// instance across restarts, and sbf can find it in the host's lease file.
func macFor(name string) net.HardwareAddr {
	sum := sha256.Sum256([]byte("sbf-vz-mac\x00" + name))
	mac := net.HardwareAddr(sum[:6])
	mac[0] = mac[0]&0xfc | 0x02
	return mac
}

// hostname is the guest's hostname: the instance name, which may contain
// '_' (sandbox names allow it, hostnames do not).
func hostname(instance string) string {
	h := strings.ReplaceAll(instance, "_", "-")
	if len(h) > 63 {
		h = strings.TrimRight(h[:63], "-")
	}
	return h
}
