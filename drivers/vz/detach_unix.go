//go:build unix

package vz

import (
	"os/exec"
	"syscall"
)

// detach starts cmd in a session of its own, so it outlives sbf and its
// terminal (a hangup does not reach it).
func detach(cmd *exec.Cmd) { cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true} }
