//go:build unix

package sshtest

import (
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"

	"github.com/creack/pty"
	"golang.org/x/crypto/ssh"
)

// terminal is a pseudo-terminal a client asked for with pty-req.
type terminal struct {
	term       string
	cols, rows uint16
	ptmx       *os.File
	copied     sync.WaitGroup // the terminal's output reaching the client
	// mu orders a resize (which reads ptmx's descriptor) before the close.
	mu     sync.Mutex
	closed bool
}

func parsePtyReq(payload []byte) *terminal {
	var req struct {
		Term          string
		Cols, Rows    uint32
		Width, Height uint32
		Modes         string
	}
	if err := ssh.Unmarshal(payload, &req); err != nil {
		return nil
	}
	return &terminal{term: req.Term, cols: uint16(req.Cols), rows: uint16(req.Rows)}
}

// start runs cmd on a new terminal, the session leader with it as its
// controlling terminal, as sshd does.
func (t *terminal) start(cmd *exec.Cmd, ch ssh.Channel) error {
	cmd.Env = append(os.Environ(), "TERM="+t.term)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true}
	ptmx, err := pty.StartWithAttrs(cmd, &pty.Winsize{Rows: t.rows, Cols: t.cols}, cmd.SysProcAttr)
	if err != nil {
		return err
	}
	t.ptmx = ptmx
	go io.Copy(ptmx, ch)
	t.copied.Add(1)
	go func() {
		defer t.copied.Done()
		io.Copy(ch, ptmx) // ends with EIO once the last process lets go of the terminal
	}()
	return nil
}

func (t *terminal) resize(payload []byte) {
	var size struct{ Cols, Rows, Width, Height uint32 }
	t.mu.Lock()
	defer t.mu.Unlock()
	if ssh.Unmarshal(payload, &size) == nil && t.ptmx != nil && !t.closed {
		pty.Setsize(t.ptmx, &pty.Winsize{Rows: uint16(size.Rows), Cols: uint16(size.Cols)})
	}
}

// drain waits for the terminal's last output, then closes it.
func (t *terminal) drain() {
	if t == nil || t.ptmx == nil {
		return
	}
	t.copied.Wait()
	t.mu.Lock()
	defer t.mu.Unlock()
	t.closed = true
	t.ptmx.Close()
}
