//go:build unix

package sim

import (
	"os/exec"
	"syscall"
)

// setGroup puts the command in its own process group and makes a
// cancellation kill the whole group, as a VM's timeout would.
func setGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
}
