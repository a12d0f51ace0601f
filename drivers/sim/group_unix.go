//go:build unix

package sim

import (
	"os/exec"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/sandboxforge/sbf/drivers"
)

// setGroup puts the command in its own process group and makes a
// cancellation kill the whole group, as a VM's timeout would.
func setGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
}

// signalGroup delivers a forwarded signal to the command's whole group.
func signalGroup(cmd *exec.Cmd, sig drivers.Signal) {
	if n := unix.SignalNum("SIG" + string(sig)); n != 0 && cmd.Process != nil {
		syscall.Kill(-cmd.Process.Pid, n)
	}
}

// exitStatus is the status a shell reports: 128+n for a command a signal
// ended.
func exitStatus(err *exec.ExitError) int {
	if ws, ok := err.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return err.ExitCode()
}
