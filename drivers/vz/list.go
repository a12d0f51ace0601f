package vz

import (
	"context"
	"net"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/drivers/vz/internal/layout"
)

// List reports the instances in the driver's folder: broken when the
// folder lacks its configuration or a file the VM boots from, running
// when a supervisor answers for it, else stopped (a supervisor that
// crashed took its VM with it).
func (d *Driver) List(ctx context.Context) ([]drivers.Instance, error) {
	names, err := layout.InstanceNames(d.opts.Dir)
	if err != nil {
		return nil, err
	}
	out := make([]drivers.Instance, 0, len(names))
	for _, name := range names {
		out = append(out, d.inspect(ctx, d.folder(name)))
	}
	return out, nil
}

func (d *Driver) inspect(ctx context.Context, f layout.Folder) drivers.Instance {
	inst := drivers.Instance{Name: f.Name, Driver: Name, Status: drivers.Broken}
	c, err := f.ReadConfig()
	if err != nil {
		return inst
	}
	inst.Reported = c.Spec
	if f.Missing(c) != "" {
		return inst
	}
	inst.Status = drivers.Stopped
	if st, err := d.status(ctx, f); err == nil && st.Up() {
		inst.Status = drivers.Running
		if ip, err := leaseIP(d.opts.Leases, c.MAC); err == nil {
			inst.SSH = net.JoinHostPort(ip, d.opts.SSHPort)
		}
	}
	return inst
}
