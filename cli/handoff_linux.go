package cli

import (
	"os/exec"
	"syscall"
)

// endWithParent makes the kernel send cmd SIGTERM when this process dies,
// however it dies: an MCP client that kills `sbf mcp` after its grace
// period would otherwise leave sbf-server running its reconcile loop for
// nobody.
func endWithParent(cmd *exec.Cmd) { cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM} }
