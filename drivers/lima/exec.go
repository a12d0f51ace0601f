package lima

import (
	"context"
	"errors"
	"os/exec"
	"strings"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/sandboxforge/sbf/drivers"
)

// Exec runs a command in a running instance over its persistent SSH
// connection, falling back to `limactl shell` when SSH cannot be used.
// A timeout kills the remote command (the guest's own `timeout` enforces
// it; the session is torn down shortly after as a backstop).
func (d *Driver) Exec(ctx context.Context, instance string, req drivers.ExecRequest) (drivers.ExecResult, error) {
	start := d.opts.Clock.Now()
	res, done, err := d.execPersistent(ctx, instance, req)
	if !done {
		res, err = d.execSSH(ctx, instance, req)
	}
	if err != nil && ctx.Err() == nil {
		d.opts.Debug("lima: SSH to %s unavailable (%v); falling back to limactl shell", instance, err)
		res, err = d.execLimactlShell(ctx, instance, req)
	}
	res.Duration = d.opts.Clock.Now().Sub(start)
	res.DurationMS = res.Duration.Milliseconds()
	return res, err
}

// remoteCommand wraps the command so the guest kills it at the deadline.
func remoteCommand(req drivers.ExecRequest) string {
	cmd := "sh -c " + shellQuote(req.Command)
	if req.Timeout > 0 {
		cmd = "timeout -k 2 " + seconds(req.Timeout) + " " + cmd
	}
	return cmd
}

func (d *Driver) execSSH(ctx context.Context, instance string, req drivers.ExecRequest) (drivers.ExecResult, error) {
	s, err := d.session(ctx, instance)
	if err != nil {
		return drivers.ExecResult{}, err
	}
	defer s.Close()
	stdout, stderr := drivers.NewCappedBuffer(req.MaxOutput), drivers.NewCappedBuffer(req.MaxOutput)
	s.Stdin, s.Stdout, s.Stderr = req.Stdin, stdout, stderr
	if err := s.Start(remoteCommand(req)); err != nil {
		return drivers.ExecResult{}, err
	}
	done := make(chan error, 1)
	go func() { done <- s.Wait() }()
	var backstop <-chan time.Time
	if req.Timeout > 0 {
		t := time.NewTimer(req.Timeout + 5*time.Second)
		defer t.Stop()
		backstop = t.C
	}
	var waitErr error
	timedOut := false
	select {
	case waitErr = <-done:
	case <-backstop:
		timedOut = true
	case <-ctx.Done():
		timedOut = true
	}
	if timedOut {
		s.Signal(ssh.SIGKILL)
		s.Close()
	}
	res := result(stdout, stderr, "ssh")
	if timedOut {
		res.ExitCode, res.TimedOut = -1, true
		return res, ctx.Err()
	}
	code, err := exitCode(waitErr)
	if err != nil {
		return res, err
	}
	res.ExitCode = code
	if req.Timeout > 0 && (code == 124 || code == 137) {
		res.TimedOut, res.ExitCode = true, -1
		res.Stderr += "Command timed out after " + seconds(req.Timeout) + "s\n"
	}
	return res, nil
}

// execPersistent runs a command without stdin on the instance's
// long-lived guest shell. done is false when the shell is busy with
// another command or cannot be used; the caller then opens a session.
func (d *Driver) execPersistent(ctx context.Context, instance string, req drivers.ExecRequest) (drivers.ExecResult, bool, error) {
	if req.Stdin != nil {
		return drivers.ExecResult{}, false, nil
	}
	sh, err := d.shellFor(ctx, instance)
	if err != nil {
		return drivers.ExecResult{}, false, nil
	}
	if !sh.mu.TryLock() {
		return drivers.ExecResult{}, false, nil
	}
	defer sh.mu.Unlock()
	res, err := sh.run(ctx, req)
	if sh.broken {
		d.dropShell(instance, sh)
		if ctx.Err() == nil && res.Stdout == "" && res.Stderr == "" {
			return res, false, nil // it broke before the command ran: retry on a session
		}
	}
	return res, true, err
}

// execLimactlShell is the fallback: one `limactl shell` process per command.
func (d *Driver) execLimactlShell(ctx context.Context, instance string, req drivers.ExecRequest) (drivers.ExecResult, error) {
	if req.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, req.Timeout)
		defer cancel()
	}
	cmd := exec.CommandContext(ctx, d.limactl, "--tty=false", "shell", "--workdir", "/", instance, "--", "sh", "-c", req.Command)
	stdout, stderr := drivers.NewCappedBuffer(req.MaxOutput), drivers.NewCappedBuffer(req.MaxOutput)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = req.Stdin, stdout, stderr
	err := cmd.Run()
	res := result(stdout, stderr, "limactl shell")
	var exit *exec.ExitError
	switch {
	case ctx.Err() != nil:
		res.ExitCode, res.TimedOut = -1, true
		res.Stderr += "Command timed out after " + seconds(req.Timeout) + "s\n"
		return res, nil
	case errors.As(err, &exit):
		res.ExitCode = exit.ExitCode()
		return res, nil
	case err != nil:
		return res, err
	}
	return res, nil
}

func result(stdout, stderr *drivers.CappedBuffer, via string) drivers.ExecResult {
	return drivers.ExecResult{
		Stdout: stdout.String(), Stderr: stderr.String(),
		StdoutBytes: stdout.Total(), StderrBytes: stderr.Total(),
		StdoutTruncated: stdout.Truncated(), StderrTruncated: stderr.Truncated(),
		Via: strings.TrimSpace(via),
	}
}
