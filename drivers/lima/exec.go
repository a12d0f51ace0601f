package lima

import (
	"context"
	"errors"
	"fmt"
	"os/exec"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/drivers/sshexec"
)

// execLimactlShell is the exec fallback: one `limactl shell` process per
// command, slower but needing nothing from the guest's ssh.config. It is
// not used for a booting instance (limactl shell would wait on the same
// boot, silently), and a shell that never started the command is an error
// naming why, never the command's exit status: ssh says 255 for both.
func (d *Driver) execLimactlShell(
	ctx context.Context,
	instance string,
	req drivers.ExecRequest,
	sshErr error,
) (drivers.ExecResult, error) {
	if errors.Is(sshErr, drivers.ErrBooting) {
		return drivers.ExecResult{}, sshErr
	}
	d.opts.Debug("lima: SSH to %s unavailable (%v); falling back to limactl shell", instance, sshErr)
	if req.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, req.Timeout)
		defer cancel()
	}
	watch := sshexec.NewStartWatch()
	args := append([]string{"--tty=false", "shell", "--workdir", "/", instance, "--"}, watch.Argv(req.Command)...)
	cmd := exec.CommandContext(ctx, d.limactl, args...)
	stdout, stderr, toStdout, toStderr := req.Outputs()
	cmd.Stdin, cmd.Stdout = req.Stdin, toStdout
	errPipe, err := cmd.StderrPipe()
	if err != nil {
		return drivers.ExecResult{}, err
	}
	if err := cmd.Start(); err != nil {
		return drivers.ExecResult{}, fmt.Errorf("running limactl shell: %w", err)
	}
	watch.Copy(errPipe, toStderr) // before Wait, which closes the pipe
	err = cmd.Wait()
	res := sshexec.Result(stdout, stderr, "limactl shell")
	var exit *exec.ExitError
	switch {
	case ctx.Err() != nil:
		sshexec.MarkTimedOut(&res, req.Timeout)
		return res, nil
	case !watch.Started() && err != nil:
		return res, fmt.Errorf("cannot reach %s: SSH failed (%v), and so did limactl shell (%v): %s",
			instance, sshErr, err, watch.Before())
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
	if errors.Is(sshErr, drivers.ErrBooting) {
		return sshErr
	}
	d.opts.Debug("lima: SSH unavailable (%v); falling back to limactl copy", sshErr)
	_, _, err := d.run(ctx, nil, "copy", "-r", from, to)
	return err
}
