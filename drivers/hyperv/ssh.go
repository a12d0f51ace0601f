package hyperv

import (
	"context"
	"fmt"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/drivers/sshexec"
)

// sshTarget asks Hyper-V for the VM's address each time a connection is
// dialled (v1 re-resolved it before every command): a restarted VM may
// have a new lease.
func (d *Driver) sshTarget(ctx context.Context, instance string) (sshexec.Target, error) {
	if err := d.checkKey(); err != nil {
		return sshexec.Target{}, err
	}
	st, err := d.vmState(ctx, instance)
	if err != nil {
		return sshexec.Target{}, err
	}
	if status(st.State) != drivers.Running {
		return sshexec.Target{}, fmt.Errorf("Hyper-V VM %s is %s, not running", instance, st.State)
	}
	ip := firstIPv4(st.IPv4)
	if ip == "" {
		return sshexec.Target{}, fmt.Errorf("Hyper-V VM %s has no IPv4 address yet", instance)
	}
	return sshexec.Target{
		Host:          ip,
		Port:          d.opts.SSHPort,
		User:          d.opts.SSHUser,
		IdentityFiles: []string{d.opts.SSHKey},
	}, nil
}
