package testutil

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// ProcessCPU is the CPU time the threads of process pid have had, to the
// nanosecond: the sum of their /proc schedstat (Linux; elsewhere, and for a
// process gone, zero). A thread that ended between two reads is not in the
// second, so a difference over a span that ends threads reads low.
func ProcessCPU(pid int) time.Duration {
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", pid))
	var sum time.Duration
	for _, f := range tasks {
		data, err := os.ReadFile(f)
		if fields := strings.Fields(string(data)); err == nil && len(fields) > 0 {
			ns, _ := strconv.ParseInt(fields[0], 10, 64)
			sum += time.Duration(ns)
		}
	}
	return sum
}
