package sshexec

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/internal/shellquote"
)

// Exec runs a command in a running instance: on a free guest shell when
// the command has no stdin ("ssh-shell"), else on a session of its own
// ("ssh"), else through the driver's fallback. A
// timeout kills the remote command (the guest's own `timeout` enforces it;
// the session is torn down shortly after as a backstop).
func (p *Pool) Exec(ctx context.Context, instance string, req drivers.ExecRequest) (drivers.ExecResult, error) {
	start := p.opts.Clock.Now()
	res, done, err := p.execShell(ctx, instance, req)
	if !done {
		res, err = p.execSession(ctx, instance, req)
	}
	if err != nil && ctx.Err() == nil && p.opts.Fallbacks.Exec != nil {
		res, err = p.opts.Fallbacks.Exec(ctx, instance, req, err)
	}
	res.Duration = p.opts.Clock.Now().Sub(start)
	res.DurationMS = res.Duration.Milliseconds()
	return res, err
}

// execShell runs a command without stdin on the instance's long-lived
// guest shell. done is false when every shell is busy with another command
// or none can be used; the caller then opens a session.
func (p *Pool) execShell(
	ctx context.Context,
	instance string,
	req drivers.ExecRequest,
) (drivers.ExecResult, bool, error) {
	if req.Stdin != nil {
		return drivers.ExecResult{}, false, nil
	}
	c, err := p.shellConn(ctx, instance, redialFor)
	if err != nil {
		return drivers.ExecResult{}, true, err // a session would need the same connection
	}
	sh, err := p.freeShell(ctx, instance, c)
	if err != nil || sh == nil {
		return drivers.ExecResult{}, false, nil
	}
	defer sh.mu.Unlock()
	res, err := sh.run(ctx, req, p.forwarder(ctx, instance))
	if sh.broken {
		p.dropShell(instance, sh)
		if ctx.Err() == nil && res.Stdout == "" && res.Stderr == "" {
			return res, false, nil // it broke before the command ran: retry on a session
		}
	}
	return res, true, err
}

// execSession runs a command on a session of its own.
func (p *Pool) execSession(ctx context.Context, instance string, req drivers.ExecRequest) (drivers.ExecResult, error) {
	s, err := p.session(ctx, instance)
	if err != nil {
		return drivers.ExecResult{}, err
	}
	defer s.Close()
	stdout, stderr, toStdout, toStderr := req.Outputs()
	errPipe, err := s.StderrPipe()
	if err != nil {
		return drivers.ExecResult{}, err
	}
	// x/crypto/ssh does not make Wait wait for stdin's end, which a
	// person's terminal may never send.
	s.Stdin, s.Stdout = req.Stdin, toStdout
	// The command first names its pid, which leads its POSIX session (see
	// signal.go), on stderr behind a marker, then becomes the command.
	marker := newToken() + "-pid"
	if err := s.Start("printf '%s %d\\n' " + marker + " $$ >&2; exec " + remoteCommand(req)); err != nil {
		return drivers.ExecResult{}, err
	}
	f := p.forwarder(ctx, instance)
	stop := f.run(req.Signals)
	defer stop()
	errCopied := make(chan struct{})
	go func() {
		defer close(errCopied)
		m := newMarkedStream(errPipe)
		if rest, err := m.readUntil(marker, toStderr); err == nil {
			leader, _ := strconv.Atoi(rest)
			f.learn(leader)
		}
		m.copyRest(toStderr)
	}()
	done := make(chan error, 1)
	go func() { done <- s.Wait() }()
	var backstop <-chan time.Time
	if req.Timeout > 0 {
		t := p.opts.Clock.NewTimer(req.Timeout + 5*time.Second)
		defer t.Stop()
		backstop = t.C()
	}
	var waitErr error
	timedOut := false
	select {
	case waitErr = <-done:
		<-errCopied
	case <-backstop:
		timedOut = true
	case <-ctx.Done():
		timedOut = true
	}
	if timedOut {
		f.kill()
		s.Close()
	}
	res := Result(stdout, stderr, "ssh")
	if timedOut {
		res.ExitCode, res.TimedOut = -1, true
		return res, ctx.Err()
	}
	code, err := exitCode(waitErr)
	if err != nil {
		return res, err
	}
	exited(&res, code, req.Timeout)
	return res, nil
}

// remoteCommand wraps the command so the guest kills it at the deadline.
func remoteCommand(req drivers.ExecRequest) string {
	cmd := "sh -c " + shellquote.Quote(StatusPassing(req.Command))
	if req.Timeout > 0 {
		cmd = "timeout -k 2 " + seconds(req.Timeout) + " " + cmd
	}
	return cmd
}

func exitCode(err error) (int, error) {
	var exit *ssh.ExitError
	var missing *ssh.ExitMissingError
	switch {
	case err == nil:
		return 0, nil
	case errors.As(err, &exit):
		return exit.ExitStatus(), nil
	case errors.As(err, &missing):
		return -1, nil
	}
	return -1, err
}

// exited records the guest's exit status. 124 and 137 are what `timeout`
// returns when it had to stop or kill the command at its deadline.
func exited(res *drivers.ExecResult, code int, timeout time.Duration) {
	res.ExitCode = code
	if timeout > 0 && (code == 124 || code == 137) {
		MarkTimedOut(res, timeout)
	}
}

// MarkTimedOut records that a command was stopped at its deadline, the
// same way whichever path ran it, so fallbacks report it alike. The note
// joins stderr, so stderr_bytes counts it too: a count smaller than the
// text it describes reads as lost output.
func MarkTimedOut(res *drivers.ExecResult, timeout time.Duration) {
	note := "Command timed out after " + seconds(timeout) + "s\n"
	res.TimedOut, res.ExitCode = true, -1
	res.Stderr += note
	res.StderrBytes += int64(len(note))
}

// Result is a command's output as an ExecResult; via names the path it
// took. Fallbacks use it so their results have the same shape.
func Result(stdout, stderr *drivers.CappedBuffer, via string) drivers.ExecResult {
	return drivers.ExecResult{
		Stdout: stdout.String(), Stderr: stderr.String(),
		StdoutBytes: stdout.Total(), StderrBytes: stderr.Total(),
		StdoutTruncated: stdout.Truncated(), StderrTruncated: stderr.Truncated(),
		Via: strings.TrimSpace(via),
	}
}

// seconds rounds up, so a timeout never reads shorter than it was.
func seconds(d time.Duration) string {
	return strconv.FormatInt(int64((d+time.Second-1)/time.Second), 10)
}
