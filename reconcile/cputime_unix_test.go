//go:build unix

package reconcile

import (
	"syscall"
	"time"
)

// cpuTime is the CPU this process used so far (user and system): what a
// create costs whatever else the machine is doing.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
