package hyperv

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/internal/lazyre"
)

// defaultTemplate is [vm] template's default (v1's). Hyper-V boots the
// base VHDX instead, as v1 did; any other template is a request it
// cannot honour.
const defaultTemplate = "template:docker"

// Validate says, at plan time, what in a spec Hyper-V cannot honour,
// naming the key, so that an apply never fails halfway over it.
func (d *Driver) Validate(ctx context.Context, s drivers.Spec) error {
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, &drivers.SpecError{Driver: Name, Key: key, Reason: fmt.Sprintf(format, args...)})
	}
	if s.VMType != "" {
		bad("vm_type", "run Lima's vm_type %q; Hyper-V runs its own VMs: remove vm_type for this sandbox", s.VMType)
	}
	if host := drivers.CanonicalArch(d.opts.HostArch); s.Arch != "" && host != "" &&
		drivers.CanonicalArch(s.Arch) != host {
		bad("arch", "run %s guests on this %s host (Hyper-V has no emulation)", s.Arch, host)
	}
	if s.Template != "" && s.Template != defaultTemplate {
		bad("template", "use Lima template %q: it boots HYPERV_BASE_VHDX, or [vm.image] location = a .vhdx", s.Template)
	}
	if len(s.Mounts) > 0 {
		bad("mounts", "share host folders into the guest; copy them in with sbf cp instead")
	}
	if len(s.Ports) > 0 {
		bad("ports", "forward host ports; the guest is reachable at its own address on the switch (sbf status shows it)")
	}
	if s.Emulation == "always" {
		bad("emulation", `run guests in software emulation; use emulation = "auto"`)
	}
	validateImage(s.Image, bad)
	if v := s.MemoryGiB * 512; v != math.Trunc(v) {
		bad(
			"memory_gib",
			"give %v GiB: Hyper-V sizes memory in 2 MiB steps (%v is the nearest)",
			s.MemoryGiB,
			math.Round(v)/512,
		)
	}
	if v := s.DiskGiB * 1024; v != math.Trunc(v) {
		bad("disk_gib", "give %v GiB: Hyper-V sizes disks in 1 MiB steps (%v is the nearest)", s.DiskGiB, math.Round(v)/1024)
	}
	return errors.Join(errs...)
}

var absPath = lazyre.New(`^([A-Za-z]:[\\/]|\\\\|/)`)

// validateImage accepts a local .vhdx (or .vhd) as the parent disk.
func validateImage(im drivers.Image, bad func(key, format string, args ...any)) {
	switch {
	case im.Kernel != "" || im.Initrd != "" || im.KernelCmdline != "":
		bad("image.kernel", "boot a kernel directly; give a bootable .vhdx as [vm.image] location")
	case im.Location == "":
	case strings.Contains(im.Location, "://") || strings.HasPrefix(im.Location, "sbf:"):
		bad("image.location", "download %s; give the path of a .vhdx on this host", im.Location)
	case !absPath.MatchString(im.Location):
		bad("image.location", "use %s: it must be an absolute path", im.Location)
	case !strings.HasSuffix(strings.ToLower(im.Location), ".vhdx") &&
		!strings.HasSuffix(strings.ToLower(im.Location), ".vhd"):
		bad("image.location", "boot %s: Hyper-V disks are .vhdx (or .vhd) files", im.Location)
	}
	if im.Digest != "" {
		bad("image.digest", "verify image digests; remove image.digest")
	}
}

var _ drivers.Validator = (*Driver)(nil)
