//go:build unix

package sshtest

import (
	"os/exec"
	"syscall"
)

// ownGroup puts the command in a process group of its own, so a signal
// reaches what it started too (`sh -c 'sleep 3 && touch …'`), as sshd's
// session teardown would.
func ownGroup(cmd *exec.Cmd) { cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} }

func killGroup(cmd *exec.Cmd) { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
