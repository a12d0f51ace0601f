package leader

import (
	"os/exec"
	"syscall"
)

// childAttr puts the command in a process group of its own (stop signals reach all it
// started) and has the kernel kill it if this process dies: a dead leader's loop must not
// outlive it while another replica takes over.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

func signalGroup(cmd *exec.Cmd, sig syscall.Signal) { syscall.Kill(-cmd.Process.Pid, sig) }
