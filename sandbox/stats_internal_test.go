package sandbox

import (
	"slices"
	"testing"
)

func TestParseStats(t *testing.T) {
	out := `@@stat1
cpu  100 0 100 700 100 0 0 0 0 0
@@stat2
cpu  130 0 120 740 110 0 0 0 5 0
@@loadavg
0.50 0.25 0.10 2/345 6789
@@uptime
12345.67 23456.78
@@meminfo
MemTotal:        4000000 kB
MemAvailable:    3000000 kB
@@cpus
2
@@procs
123
@@df
/dev/vda1 20000000 5000000 15000000 25% /
`
	s := parseStats(sections(out))
	// 50 busy (30 user + 20 system) of 100 (+40 idle, +10 iowait).
	if s.CPUPercent != 50 || !slices.Equal(s.Load, []float64{0.5, 0.25, 0.1}) || s.UptimeSeconds != 12345.67 ||
		s.MemoryTotal != 4096000000 || s.MemoryUsed != 1024000000 || s.CPUs != 2 || s.Processes != 123 ||
		s.DiskTotal != 20480000000 || s.DiskUsed != 5120000000 || s.DiskAvail != 15360000000 || s.Partial {
		t.Errorf("parsed %+v", s)
	}
	// A guest without /proc (a sim on macOS) gives partial figures.
	if s := parseStats(sections("@@cpus\n8\n@@df\nfs 100 50 50 50% /\n")); !s.Partial || s.CPUs != 8 ||
		s.DiskTotal != 102400 {
		t.Errorf("without /proc: %+v", s)
	}
}
