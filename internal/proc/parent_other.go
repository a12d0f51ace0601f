//go:build unix && !linux

package proc

import "syscall"

// endWithParent: only Linux has a parent-death signal.
func endWithParent(*syscall.SysProcAttr) {}
