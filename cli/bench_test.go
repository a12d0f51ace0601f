package cli

import (
	"fmt"
	"strings"
	"testing"
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
// and 1,000 converged sandboxes in the workspace.
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
			for b.Loop() {
				if r := w.run(volatileSim, "status", "--json"); r.code != 0 {
					b.Fatalf("status: %s", r.stderr)
				}
			}
		})
	}
}
