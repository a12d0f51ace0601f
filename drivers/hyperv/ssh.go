package hyperv

import (
	"context"
	"fmt"
	"io"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/drivers/sshexec"
)

// Exec runs a command in a running VM over its kept-open SSH connection.
func (d *Driver) Exec(ctx context.Context, instance string, req drivers.ExecRequest) (drivers.ExecResult, error) {
	return d.ssh.Exec(ctx, instance, req)
}

// Terminal runs an interactive command on a pseudo-terminal in the guest
// (sbf exec -t, sbf shell) over the instance's SSH connection.
func (d *Driver) Terminal(ctx context.Context, instance string, req drivers.TerminalRequest) (int, error) {
	return d.ssh.Terminal(ctx, instance, req)
}

// CopyIn copies a local file or folder into the guest as one tar stream.
func (d *Driver) CopyIn(ctx context.Context, instance, localPath, remotePath string) error {
	return d.ssh.CopyIn(ctx, instance, localPath, remotePath)
}

// CopyOut copies a guest file or folder out the same way.
func (d *Driver) CopyOut(ctx context.Context, instance, remotePath, localPath string) error {
	return d.ssh.CopyOut(ctx, instance, remotePath, localPath)
}

// PutArchive unpacks a tar stream into a guest folder.
func (d *Driver) PutArchive(ctx context.Context, instance, dir string, archive io.Reader) error {
	return d.ssh.PutArchive(ctx, instance, dir, archive)
}

// GetArchive streams a guest path out as a tar archive.
func (d *Driver) GetArchive(ctx context.Context, instance, path string, archive io.Writer) error {
	return d.ssh.GetArchive(ctx, instance, path, archive)
}

// Alive reports whether the instance's SSH connection is open and answers.
func (d *Driver) Alive(instance string) bool { return d.ssh.Alive(instance) }

// Close closes every SSH connection.
func (d *Driver) Close() error { return d.ssh.Close() }

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
	return sshexec.Target{Host: ip, Port: d.opts.SSHPort, User: d.opts.SSHUser, IdentityFiles: []string{d.opts.SSHKey}}, nil
}
