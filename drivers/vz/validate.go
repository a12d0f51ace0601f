package vz

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/images"
	"github.com/sandboxforge/sbf/internal/lazyre"
)

var sha256Digest = lazyre.New(`^sha256:[0-9a-fA-F]{64}$`)

// Validate says, at plan time, what in a spec vz cannot honour, naming
// the key, so an apply never fails halfway over it.
func (d *Driver) Validate(ctx context.Context, s drivers.Spec) error {
	var errs []error
	bad := func(key, reason string, args ...any) {
		errs = append(errs, &drivers.SpecError{Driver: Name, Key: key, Reason: fmt.Sprintf(reason, args...)})
	}
	if s.VMType != "" && s.VMType != "vz" {
		bad("vm_type", `run vm_type %q: it boots Linux with Virtualization.framework only; `+
			`set vm_type = "vz", or use the lima driver`, s.VMType)
	}
	if host := drivers.CanonicalArch(d.opts.HostArch); s.Arch != "" && drivers.CanonicalArch(s.Arch) != host {
		bad("arch", "run %s guests on this %s host: Virtualization.framework has no emulation; "+
			"use arch = %q, or the lima driver", s.Arch, host, host)
	}
	if s.Emulation == "always" {
		bad("emulation", `emulate: Virtualization.framework runs guests on the hardware only; use emulation = "auto"`)
	}
	if len(s.Mounts) > 0 {
		bad("mounts", "share host folders yet (virtiofs is not wired in); "+
			"remove mounts, copy with sbf cp, or use the lima driver")
	}
	if len(s.Ports) > 0 {
		bad("ports", "forward ports yet; "+
			"the guest's own address on the NAT network (sbf status shows it) is reachable from this Mac")
	}
	for _, e := range d.imageProblems(s) {
		bad(e[0], "%s", e[1])
	}
	return errors.Join(errs...)
}

// imageProblems are the [vm.image] settings vz cannot boot, as key and
// reason pairs.
func (d *Driver) imageProblems(s drivers.Spec) [][2]string {
	im := s.Image
	if im.Location == "" {
		return [][2]string{{"template", fmt.Sprintf(`boot Lima templates (%s): it boots a kernel directly; `+
			`set [vm.image] location = "sbf:debian-12", or location (a raw disk), kernel and initrd`, s.Template)}}
	}
	if name, ok := images.NameOf(im.Location); ok {
		if p := d.recipeProblem(name, d.arch(s)); p != "" {
			return [][2]string{{"image.location", p}}
		}
		return nil
	}
	var out [][2]string
	if strings.Contains(im.Location, "://") {
		out = append(out, [2]string{"image.location", "download images: give the path of a raw disk image on this Mac"})
	}
	switch strings.ToLower(filepath.Ext(im.Location)) {
	case ".qcow2", ".vmdk", ".vdi", ".vhd", ".vhdx", ".iso":
		out = append(out, [2]string{"image.location", fmt.Sprintf("boot %s disks: "+
			"Virtualization.framework reads raw images (qemu-img convert -O raw)", filepath.Ext(im.Location))})
	}
	if im.Kernel == "" {
		out = append(out, [2]string{"image.kernel", "boot a disk without a kernel: " +
			"it boots Linux directly (no bootloader); set [vm.image] kernel, and initrd"})
	}
	if im.Digest != "" && !sha256Digest.MatchString(im.Digest) {
		out = append(out, [2]string{"image.digest", "check " + im.Digest + ": only sha256:HEX digests are supported"})
	}
	return out
}

var _ drivers.Validator = (*Driver)(nil)
