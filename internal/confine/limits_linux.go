package confine

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// Bound sets l on this process for good (the hard limit too, so it cannot
// raise them again), from now on: the address space it may map is what it
// maps now plus l.AddressSpace.
func Bound(l Limits) (LimitsReport, error) {
	var rep LimitsReport
	if l.CPU > 0 {
		secs := uint64((l.CPU + 999_999_999) / 1_000_000_000)
		if err := syscall.Setrlimit(syscall.RLIMIT_CPU, &syscall.Rlimit{Cur: secs, Max: secs}); err != nil {
			return rep, fmt.Errorf("limiting this process's CPU time: %w", err)
		}
		rep.CPU = true
	}
	if l.AddressSpace > 0 {
		mapped, err := mappedBytes()
		if err != nil {
			return rep, fmt.Errorf("limiting this process's address space: %w", err)
		}
		limit := uint64(mapped + l.AddressSpace)
		if err := syscall.Setrlimit(syscall.RLIMIT_AS, &syscall.Rlimit{Cur: limit, Max: limit}); err != nil {
			return rep, fmt.Errorf("limiting this process's address space: %w", err)
		}
		rep.AddressSpace = int64(limit)
	}
	return rep, nil
}

// mappedBytes is the address space this process maps (VmSize).
func mappedBytes() (int64, error) {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmSize:"); ok {
			kib, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kib << 10, err
		}
	}
	return 0, fmt.Errorf("/proc/self/status names no VmSize")
}
