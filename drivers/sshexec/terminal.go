package sshexec

import (
	"context"

	"golang.org/x/crypto/ssh"

	"github.com/sandboxforge/sbf/drivers"
)

var _ drivers.Terminal = (*Pool)(nil)

// Terminal runs an interactive command on a pseudo-terminal in the guest.
// Signals need no forwarding: Ctrl-C reaches the guest's terminal as a
// byte, and sshd hangs up the terminal when the session ends.
func (p *Pool) Terminal(ctx context.Context, instance string, req drivers.TerminalRequest) (int, error) {
	s, err := p.session(ctx, instance)
	if err != nil {
		return -1, err
	}
	defer s.Close()
	term := req.Term
	if term == "" {
		term = "xterm-256color"
	}
	modes := ssh.TerminalModes{ssh.ECHO: 1, ssh.TTY_OP_ISPEED: 38400, ssh.TTY_OP_OSPEED: 38400}
	if err := s.RequestPty(term, max(req.Size.Rows, 1), max(req.Size.Cols, 1), modes); err != nil {
		return -1, err
	}
	s.Stdin, s.Stdout, s.Stderr = req.Stdin, req.Stdout, req.Stdout
	if req.Command == "" {
		err = s.Shell()
	} else {
		err = s.Start(req.Command)
	}
	if err != nil {
		return -1, err
	}
	stop := context.AfterFunc(ctx, func() { s.Close() })
	defer stop()
	done := make(chan struct{})
	defer close(done)
	go func() {
		for {
			select {
			case size := <-req.Resize:
				s.WindowChange(size.Rows, size.Cols)
			case <-done:
				return
			}
		}
	}()
	code, err := exitCode(s.Wait())
	if ctx.Err() != nil {
		return -1, ctx.Err()
	}
	return code, err
}
