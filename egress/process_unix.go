//go:build unix

package egress

import (
	"errors"
	"os/exec"
	"syscall"
)

// processAlive probes pid with signal 0: EPERM still means it exists.
func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// detach starts the proxy in a session of its own: it outlives the launcher
// (which becomes QEMU) and no signal to QEMU's process group reaches it.
func detach(cmd *exec.Cmd) { cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true} }
