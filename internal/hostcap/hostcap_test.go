package hostcap

import (
	"math"
	"testing"
)

func TestParseMeminfo(t *testing.T) {
	v := parseMeminfo([]byte("MemTotal:       24000000 kB\nMemFree:         1000000 kB\nMemAvailable:    3145728 kB\n"))
	if v == nil || math.Abs(*v-3.0) > 1e-9 {
		t.Errorf("MemAvailable 3145728 kB = %v GiB, want 3.0", v)
	}
	v = parseMeminfo([]byte("MemFree:         2097152 kB\n"))
	if v == nil || *v != 2.0 {
		t.Errorf("MemFree fallback = %v", v)
	}
	if parseMeminfo([]byte("garbage")) != nil {
		t.Error("garbage parsed")
	}
}

func TestParseVMStat(t *testing.T) {
	out := "Mach Virtual Memory Statistics: (page size of 16384 bytes)\n" +
		"Pages free:                               32768.\nPages active:                            100000.\n" +
		"Pages inactive:                           16384.\nPages speculative:                        16384.\n"
	v := parseVMStat([]byte(out))
	if v == nil || *v != 1.0 {
		t.Errorf("vm_stat = %v GiB, want 1.0", v)
	}
	if parseVMStat([]byte("Pages free: 1.")) != nil {
		t.Error("vm_stat without a page size parsed")
	}
}

func TestProbeAnswersHere(t *testing.T) {
	c := Probe(t.TempDir())
	if c.CPUs < 1 || c.MemoryAvailableGiB == nil || c.DiskFreeGiB == nil || *c.DiskFreeGiB <= 0 {
		t.Errorf("probe = %+v", c)
	}
}
