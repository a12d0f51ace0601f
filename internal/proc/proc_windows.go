package proc

import (
	"os/exec"
	"syscall"
)

const (
	createNewProcessGroup = 0x00000200
	detachedProcess       = 0x00000008
)

// Group starts cmd in a console process group of its own: Ctrl+C is not
// delivered to it.
func Group(cmd *exec.Cmd) { attrs(cmd).CreationFlags |= createNewProcessGroup }

// KillGroup kills the command (Windows ends no group of processes).
func KillGroup(cmd *exec.Cmd) error { return cmd.Process.Kill() }

// Detach starts cmd without a console of its own, so it outlives sbf.
func Detach(cmd *exec.Cmd) { attrs(cmd).CreationFlags |= detachedProcess }

// EndWithParent: Windows has no parent-death signal.
func EndWithParent(*exec.Cmd) {}

// SignalGroup can only end the command where there are no POSIX signals.
func SignalGroup(cmd *exec.Cmd, _ string) {
	if cmd.Process != nil {
		cmd.Process.Kill()
	}
}

// ExitStatus is the process's exit code.
func ExitStatus(err *exec.ExitError) int { return err.ExitCode() }

func attrs(cmd *exec.Cmd) *syscall.SysProcAttr {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	return cmd.SysProcAttr
}
