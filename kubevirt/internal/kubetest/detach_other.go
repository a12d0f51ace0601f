//go:build !unix

package kubetest

import "syscall"

func detached() *syscall.SysProcAttr { return nil }
