package egress

import (
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// LetGuardRead lets the VM's host guard (whose PID is in pidFile) read this
// process's memory, as it must to judge its connect: where Yama allows a
// process to read only its descendants' memory (ptrace_scope 1), a relay
// (QEMU's child, the guard's sibling) needs to say so. Without a guard,
// nothing happens.
func LetGuardRead(pidFile string) {
	if pidFile == "" {
		return
	}
	data, err := os.ReadFile(pidFile)
	if err != nil {
		return
	}
	if pid, err := strconv.Atoi(strings.TrimSpace(string(data))); err == nil && pid > 0 {
		unix.Prctl(unix.PR_SET_PTRACER, uintptr(pid), 0, 0, 0)
	}
}
