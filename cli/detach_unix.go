//go:build unix

package cli

import (
	"os/exec"
	"syscall"
)

// detach starts cmd in its own session, so it outlives this process and
// its terminal.
func detach(cmd *exec.Cmd) { cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true} }
