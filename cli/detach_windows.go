package cli

import (
	"os/exec"
	"syscall"
)

// detach starts cmd without a console of its own, so it outlives this process.
func detach(cmd *exec.Cmd) {
	const detachedProcess = 0x00000008
	cmd.SysProcAttr = &syscall.SysProcAttr{CreationFlags: detachedProcess}
}
