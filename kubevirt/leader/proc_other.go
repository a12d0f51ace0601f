//go:build !linux

package leader

import (
	"os/exec"
	"syscall"
)

// childAttr: only Linux has a parent-death signal; elsewhere a killed leader's command
// outlives it (run replicas in a cluster, where the container's end kills it).
func childAttr() *syscall.SysProcAttr { return nil }

func signalGroup(cmd *exec.Cmd, sig syscall.Signal) { cmd.Process.Signal(sig) }
