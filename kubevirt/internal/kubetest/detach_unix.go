//go:build unix

package kubetest

import "syscall"

// detached puts the reaper in a process group of its own, so a Ctrl-C at the terminal, which
// stops the tests, does not stop it.
func detached() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
