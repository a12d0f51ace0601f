//go:build unix

package proc

import (
	"os/exec"
	"syscall"

	"golang.org/x/sys/unix"
)

// Group starts cmd in a process group of its own, so no terminal signal
// reaches it. It keeps the attributes cmd already has.
func Group(cmd *exec.Cmd) { attrs(cmd).Setpgid = true }

// KillGroup kills the whole group of a command started with Group: its
// own children with it. As a Cmd's Cancel, a cancelled context does so.
func KillGroup(cmd *exec.Cmd) error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }

// Detach starts cmd in a session of its own: it outlives sbf and its
// terminal (no hangup or Ctrl-C reaches it).
func Detach(cmd *exec.Cmd) { attrs(cmd).Setsid = true }

// EndWithParent makes the kernel send cmd SIGTERM when this process dies,
// however it dies (Linux only; elsewhere sbf passes on its signals).
func EndWithParent(cmd *exec.Cmd) { endWithParent(attrs(cmd)) }

// SignalGroup sends the signal named sig ("INT", "TERM", …) to the group
// of a command started with Group.
func SignalGroup(cmd *exec.Cmd, sig string) {
	if n := unix.SignalNum("SIG" + sig); n != 0 && cmd.Process != nil {
		syscall.Kill(-cmd.Process.Pid, n)
	}
}

// ExitStatus is the status a shell reports: 128+n for a process a signal
// ended.
func ExitStatus(err *exec.ExitError) int {
	if ws, ok := err.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return err.ExitCode()
}

func attrs(cmd *exec.Cmd) *syscall.SysProcAttr {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	return cmd.SysProcAttr
}
