//go:build unix

package cli

import (
	"os"
	"syscall"
)

// execServer makes this process bin (sbf-server; sbf for sbf-server's
// import-v1), with the same pid, standard streams and environment: `sbf
// mcp` and `sbf serve` are one process, as the client or service manager
// that started them sees it (signals and its end reach the server
// itself), instead of an sbf that only waits for its child. It returns
// only when the exec failed.
func execServer(bin string, argv []string) error {
	return syscall.Exec(bin, argv, os.Environ())
}

const canExecServer = true
