package lima

import (
	"context"
	"errors"
	"os/exec"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/drivers/sshexec"
)

// execLimactlShell is the exec fallback: one `limactl shell` process per
// command, slower but needing nothing from the guest's ssh.config.
func (d *Driver) execLimactlShell(
	ctx context.Context,
	instance string,
	req drivers.ExecRequest,
	sshErr error,
) (drivers.ExecResult, error) {
	d.opts.Debug("lima: SSH to %s unavailable (%v); falling back to limactl shell", instance, sshErr)
	if req.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, req.Timeout)
		defer cancel()
	}
	cmd := exec.CommandContext(
		ctx,
		d.limactl,
		"--tty=false",
		"shell",
		"--workdir",
		"/",
		instance,
		"--",
		"sh",
		"-c",
		req.Command,
	)
	stdout, stderr := drivers.NewCappedBuffer(req.MaxOutput), drivers.NewCappedBuffer(req.MaxOutput)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = req.Stdin, stdout, stderr
	err := cmd.Run()
	res := sshexec.Result(stdout, stderr, "limactl shell")
	var exit *exec.ExitError
	switch {
	case ctx.Err() != nil:
		sshexec.MarkTimedOut(&res, req.Timeout)
		return res, nil
	case errors.As(err, &exit):
		res.ExitCode = exit.ExitCode()
		return res, nil
	case err != nil:
		return res, err
	}
	return res, nil
}

// copyLimactl is the copy fallback; from and to name the guest side
// limactl's way, INSTANCE:PATH.
func (d *Driver) copyLimactl(ctx context.Context, from, to string, sshErr error) error {
	d.opts.Debug("lima: SSH unavailable (%v); falling back to limactl copy", sshErr)
	_, _, err := d.run(ctx, nil, "copy", "-r", from, to)
	return err
}
