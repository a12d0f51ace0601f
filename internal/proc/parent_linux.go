package proc

import "syscall"

func endWithParent(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGTERM }
