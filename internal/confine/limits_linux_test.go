package confine

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sandboxforge/sbf/internal/testutil"
)

// limitsChild sets only the bound it tests, then spends: "memory" allocates
// 1 GiB past a 64 MiB address space, "cpu" spins past 1 s of CPU time; either
// prints "survived" if the bound did not stop it. (The spinner sets no
// address space bound: under -race the detector maps memory as it runs and
// exits 66 when it cannot, which is not the kernel's kill.)
func limitsChild(action string) int {
	l := Limits{AddressSpace: 64 << 20}
	if action == "cpu" {
		l = Limits{CPU: time.Second}
	}
	if _, err := Bound(l); err != nil {
		fmt.Println("bounding:", err)
		return 3
	}
	switch action {
	case "memory":
		var keep [][]byte
		for range 64 {
			b := make([]byte, 16<<20)
			for i := range b {
				b[i] = 1
			}
			keep = append(keep, b)
		}
		fmt.Println("survived", len(keep))
	case "cpu":
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); {
		}
		fmt.Println("survived")
	}
	return 0
}

// A process that bounded itself cannot map 1 GiB past its address space
// limit nor spin past its CPU time: the runtime reports "out of memory",
// the kernel kills the spinner.
func TestAProcessStaysWithinTheLimitsItSet(t *testing.T) {
	for _, action := range []string{"memory", "cpu"} {
		t.Run(action, func(t *testing.T) {
			if action == "memory" {
				testutil.WithoutRace(t, "the detector's allocator maps memory of its own")
			}
			c := exec.Command(os.Args[0], "-test.run=^$")
			c.Env = append(os.Environ(), "LIMITS_CHILD="+action)
			start := time.Now()
			out, err := c.CombinedOutput()
			var ee *exec.ExitError
			if strings.Contains(string(out), "survived") || !errors.As(err, &ee) {
				t.Fatalf("the %s bound did not stop the child (%v): %.300s", action, err, out)
			}
			ws := ee.Sys().(syscall.WaitStatus)
			switch action {
			case "memory":
				// The runtime dies of the refused mapping (exit status 2), how depends on which of
				// its requests met the bound: "out of memory", "cannot allocate memory" (a new
				// arena), once in a cold run a SIGSEGV in the GC. Without the bound it survives.
				if ws.Signaled() || ws.ExitStatus() != 2 {
					t.Errorf("the child did not die of the runtime's refused memory: %v %.300s", err, out)
				}
				t.Logf("the child: %v, %.120s", err, out)
			case "cpu":
				if !ws.Signaled() || ws.Signal() != syscall.SIGKILL || time.Since(start) > 20*time.Second {
					t.Errorf("the spinner was not killed at its CPU limit: %v after %s: %.300s", err, time.Since(start), out)
				}
			}
		})
	}
}

func TestLimitsReportSaysWhatIsSet(t *testing.T) {
	if got := (LimitsReport{CPU: true, AddressSpace: 3 << 30}).String(); got !=
		"limits: CPU time, address space (3072 MiB)" {
		t.Errorf("report = %q", got)
	}
	if got := (LimitsReport{Why: "not set on plan9"}).String(); got != "limits: none (not set on plan9)" {
		t.Errorf("report = %q", got)
	}
}
