//go:build unix

package sim

import (
	"context"
	"errors"
	"github.com/sandboxforge/sbf/internal/proc"
	"io"
	"os"
	"os/exec"

	"github.com/creack/pty"

	"github.com/sandboxforge/sbf/drivers"
)

// Terminal runs the command, or sh when there is none, on a real
// pseudo-terminal in the instance's folder: only where the host has them.
func (d *Driver) Terminal(ctx context.Context, instance string, req drivers.TerminalRequest) (int, error) {
	if err := d.begin(ctx, "terminal", instance); err != nil {
		return -1, err
	}
	if err := d.running(instance); err != nil {
		return -1, d.end("terminal", instance, err)
	}
	command := req.Command
	if command == "" {
		command = "exec sh"
	}
	dir := d.guestDir(instance)
	cmd := exec.CommandContext(ctx, "sh", "-c", command)
	cmd.Dir = dir
	cmd.Env = []string{
		"HOME=" + dir,
		"PATH=" + os.Getenv("PATH"),
		"LANG=C.UTF-8",
		"TERM=" + req.Term,
		"SBF_SIM_INSTANCE=" + instance,
	}
	ptmx, err := pty.StartWithSize(
		cmd,
		&pty.Winsize{Rows: uint16(max(req.Size.Rows, 1)), Cols: uint16(max(req.Size.Cols, 1))},
	)
	if err != nil {
		return -1, d.end("terminal", instance, err)
	}
	defer ptmx.Close()
	go io.Copy(ptmx, req.Stdin)
	copied := make(chan struct{})
	go func() {
		io.Copy(req.Stdout, ptmx) // ends with EIO once the terminal has no process left
		close(copied)
	}()
	done := make(chan struct{})
	defer close(done)
	go func() {
		for {
			select {
			case size := <-req.Resize:
				pty.Setsize(ptmx, &pty.Winsize{Rows: uint16(size.Rows), Cols: uint16(size.Cols)})
			case <-done:
				return
			}
		}
	}()
	err = cmd.Wait()
	<-copied
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return proc.ExitStatus(exit), d.end("terminal", instance, nil)
	}
	if err != nil {
		return -1, d.end("terminal", instance, err)
	}
	return 0, d.end("terminal", instance, nil)
}
