//go:build unix

package sshtest

import (
	"os"
	"os/exec"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// ownGroup makes the command lead a POSIX session of its own, as sshd
// does for each session (setsid), so a signal can reach what it started
// too (`sh -c 'sleep 3 && touch …'`).
func ownGroup(cmd *exec.Cmd) { cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true} }

func killGroup(cmd *exec.Cmd) { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }

// signalName is the signal that ended the process, as SSH names it ("INT"),
// or "" when it exited.
func signalName(ps *os.ProcessState) string {
	if ps == nil {
		return ""
	}
	ws, ok := ps.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() {
		return ""
	}
	return strings.TrimPrefix(unix.SignalName(ws.Signal()), "SIG")
}
