package lima

import (
	"context"
	"errors"

	"github.com/sandboxforge/sbf/drivers"
)

// Validate says, at plan time, what in a spec Lima cannot honour here,
// naming the key, so that an apply never fails halfway over it.
func (d *Driver) Validate(ctx context.Context, s drivers.Spec) error {
	var errs []error
	bad := func(key, reason string) {
		errs = append(errs, &drivers.SpecError{Driver: Name, Key: key, Reason: reason})
	}
	switch {
	case s.VMType == "vz" && d.opts.HostOS != "darwin":
		bad("vm_type", `run vm_type "vz" outside macOS (Apple Virtualization); use "qemu" here`)
	case s.VMType == "wsl2":
		bad("vm_type", `run vm_type "wsl2" guests (Windows only); use "qemu" or "vz"`)
	}
	if _, err := parseMounts(s.Mounts); err != nil {
		bad("mounts", err.Error())
	}
	if _, err := parsePorts(s.Ports); err != nil {
		bad("ports", err.Error())
	}
	if s.Image.Location == "" && d.limactl != "" {
		if _, err := d.templates.images(s.Template); err != nil {
			bad("template", "use it: "+err.Error())
		}
	}
	return errors.Join(errs...)
}

var _ drivers.Validator = (*Driver)(nil)
