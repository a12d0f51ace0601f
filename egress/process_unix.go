//go:build unix

package egress

import (
	"errors"
	"syscall"
)

// processAlive probes pid with signal 0: EPERM still means it exists.
func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
