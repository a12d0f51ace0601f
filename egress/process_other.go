//go:build !unix

package egress

import (
	"os"
)

// processAlive on hosts without signals: FindProcess opens a handle only for
// a live process (Windows). QEMU sandboxes run on unix hosts; this keeps the
// package building everywhere.
func processAlive(pid int) bool {
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	p.Release()
	return true
}
