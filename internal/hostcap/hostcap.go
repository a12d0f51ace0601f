// Package hostcap measures what the host can give a new VM: CPUs,
// available memory and free disk. Probes that cannot answer report
// unknown (nil) and their check is skipped, as SandboxForge v1 did.
package hostcap

import (
	"bufio"
	"bytes"
	"runtime"
	"strconv"
	"strings"

	"github.com/sandboxforge/sbf/internal/lazyre"
)

// Capacity is a snapshot of the host.
type Capacity struct {
	CPUs               int      `json:"cpu_count"`
	MemoryAvailableGiB *float64 `json:"memory_available_gib"`
	DiskFreeGiB        *float64 `json:"disk_free_gib"`
}

// Probe measures the host; disk is measured on the filesystem holding path.
func Probe(path string) Capacity {
	return Capacity{CPUs: runtime.NumCPU(), MemoryAvailableGiB: memoryAvailableGiB(), DiskFreeGiB: diskFreeGiB(path)}
}

const gib = 1 << 30

// parseMeminfo reads Linux's /proc/meminfo: MemAvailable, else MemFree.
func parseMeminfo(data []byte) *float64 {
	fields := map[string]float64{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		key, rest, ok := strings.Cut(sc.Text(), ":")
		parts := strings.Fields(rest)
		if !ok || len(parts) == 0 {
			continue
		}
		if kb, err := strconv.ParseFloat(parts[0], 64); err == nil {
			fields[key] = kb * 1024 / gib
		}
	}
	for _, k := range []string{"MemAvailable", "MemFree"} {
		if v, ok := fields[k]; ok {
			return &v
		}
	}
	return nil
}

var (
	pageSizeRE = lazyre.New(`page size of (\d+) bytes`)
	vmStatRE   = lazyre.New(`^Pages (free|inactive|speculative):\s+(\d+)\.?$`)
)

// parseVMStat reads macOS's vm_stat: (free + inactive + speculative) pages.
func parseVMStat(data []byte) *float64 {
	m := pageSizeRE.FindSubmatch(data)
	if m == nil {
		return nil
	}
	page, _ := strconv.ParseFloat(string(m[1]), 64)
	var pages float64
	found := false
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		if m := vmStatRE.FindStringSubmatch(strings.TrimSpace(sc.Text())); m != nil {
			n, _ := strconv.ParseFloat(m[2], 64)
			pages += n
			found = true
		}
	}
	if !found {
		return nil
	}
	v := pages * page / gib
	return &v
}
