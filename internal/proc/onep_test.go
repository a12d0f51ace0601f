package proc

import (
	"runtime"
	"testing"
)

// OneP takes the process to one P, unless the environment chose a number.
func TestOnePLeavesAChosenGOMAXPROCSAlone(t *testing.T) {
	before := runtime.GOMAXPROCS(0)
	defer runtime.GOMAXPROCS(before)
	runtime.GOMAXPROCS(3)
	OneP(func(k string) string {
		if k == "GOMAXPROCS" {
			return "3"
		}
		return ""
	})
	if n := runtime.GOMAXPROCS(0); n != 3 {
		t.Errorf("with GOMAXPROCS=3 in the environment the process runs on %d Ps", n)
	}
	OneP(func(string) string { return "" })
	if n := runtime.GOMAXPROCS(0); n != 1 {
		t.Errorf("with no GOMAXPROCS in the environment the process runs on %d Ps, want 1", n)
	}
}
