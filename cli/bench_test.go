package cli

import (
	"testing"
)

// BenchmarkConvergedApplyProcess is `sbf apply --auto-approve` on a
// converged sim workspace as a user runs it: process start, spec load,
// state lock, lease renewal, one list, an empty plan.
func BenchmarkConvergedApplyProcess(b *testing.B) {
	w := newSimWorkspace(b, simSpec)
	if r := w.run(nil, "apply", "--auto-approve"); r.code != 0 {
		b.Fatalf("setup apply: %s", r.stderr)
	}
	for b.Loop() {
		if r := w.run(nil, "apply", "--auto-approve"); r.code != 0 {
			b.Fatalf("apply: %s", r.stderr)
		}
	}
}
