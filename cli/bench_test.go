package cli

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"
)

// volatileSim has the sim sync nothing: the benchmarks measure sbf, not
// the sim's disk.
var volatileSim = []string{"SBF_SIM_VOLATILE=1"}

// BenchmarkConvergedApplyProcess is `sbf apply --auto-approve` on a
// converged sim workspace as a user runs it: process start, spec load,
// state lock, lease renewal, one list, an empty plan.
func BenchmarkConvergedApplyProcess(b *testing.B) {
	w := newSimWorkspace(b, simSpec)
	if r := w.run(volatileSim, "apply", "--auto-approve"); r.code != 0 {
		b.Fatalf("setup apply: %s", r.stderr)
	}
	for b.Loop() {
		if r := w.run(volatileSim, "apply", "--auto-approve"); r.code != 0 {
			b.Fatalf("apply: %s", r.stderr)
		}
	}
}

// BenchmarkStatusProcess is `sbf status --json` as a user runs it, with 1
// and 1,000 converged sandboxes in the workspace; cpu-ms/op is the
// process's own CPU time (user and system), start to exit.
func BenchmarkStatusProcess(b *testing.B) {
	for _, n := range []int{1, 1000} {
		b.Run(fmt.Sprintf("sandboxes=%d", n), func(b *testing.B) {
			var text strings.Builder
			fmt.Fprintf(&text, "%s[lease]\nmax_instances = %d\n", simSpec, n+10)
			for i := range n {
				fmt.Fprintf(&text, "[sandboxes.sb%04d]\n", i)
			}
			w := newSimWorkspace(b, text.String())
			if r := w.run(volatileSim, "apply", "--auto-approve", "--parallelism", "8"); r.code != 0 {
				b.Fatalf("setup apply: %s", r.stderr)
			}
			var cpu time.Duration
			for b.Loop() {
				c := w.cmd(volatileSim, "status", "--json")
				var errb bytes.Buffer
				c.Stderr = &errb
				if err := c.Run(); err != nil {
					b.Fatalf("status: %v: %s", err, errb.String())
				}
				cpu += c.ProcessState.UserTime() + c.ProcessState.SystemTime()
			}
			b.ReportMetric(float64(cpu.Microseconds())/float64(b.N)/1000, "cpu-ms/op")
		})
	}
}
