package reconcile

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sandboxforge/sbf/spec"
	"github.com/sandboxforge/sbf/state"
	"github.com/sandboxforge/sbf/state/statefile"
)

// scaleSpec declares n sim sandboxes with a cap that admits them all.
func scaleSpec(n int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "[vm]\ndriver = \"sim\"\n[lease]\nmax_instances = %d\n", n+10)
	for i := range n {
		fmt.Fprintf(&b, "[sandboxes.sb%05d]\n", i)
	}
	return b.String()
}

// BenchmarkFirstApply is the first `sbf apply` of n sandboxes on the sim
// with zero latency: what state writes and admission cost as n grows.
func BenchmarkFirstApply(b *testing.B) {
	for _, n := range []int{10, 100, 1000, 5000, 10000} {
		b.Run(fmt.Sprintf("sandboxes=%d", n), func(b *testing.B) {
			for b.Loop() {
				b.StopTimer()
				h := newHarness(b, scaleSpec(n))
				h.eng.Parallelism, h.volatile = 8, true // the engine's cost, not the sim's disk
				b.StartTimer()
				start, cpu := time.Now(), cpuTime()
				res, err := h.apply()
				if err != nil {
					b.Fatal(err)
				}
				if got := len(res.Plan.Actions); got < n {
					b.Fatalf("planned %d actions for %d sandboxes", got, n)
				}
				b.ReportMetric(float64(time.Since(start).Microseconds())/float64(n)/1000, "ms/sandbox")
				b.ReportMetric(float64((cpuTime()-cpu).Microseconds())/float64(n)/1000, "cpu-ms/sandbox")
			}
		})
	}
}

// benchConverged runs op on n converged sandboxes for each n, reporting
// the CPU each op took.
func benchConverged(b *testing.B, sizes []int, op func(b *testing.B, h *harness, n int)) {
	for _, n := range sizes {
		b.Run(fmt.Sprintf("sandboxes=%d", n), func(b *testing.B) {
			h := newHarness(b, scaleSpec(n))
			h.eng.Parallelism, h.volatile = 8, true
			h.mustApply()
			cpu := cpuTime()
			for b.Loop() {
				op(b, h, n)
			}
			b.ReportMetric(float64((cpuTime()-cpu).Microseconds())/float64(b.N)/1000, "cpu-ms/op")
		})
	}
}

// BenchmarkNoopApply is `sbf apply` of n converged sandboxes.
func BenchmarkNoopApply(b *testing.B) {
	benchConverged(b, []int{10, 100, 1000}, func(b *testing.B, h *harness, _ int) {
		if res, err := h.apply(); err != nil || !res.Plan.Empty() {
			b.Fatalf("apply: %v", err)
		}
	})
}

// BenchmarkRenewingApply is `sbf apply` of n converged sandboxes a minute
// after the last: nothing to change but every lease to renew (each renewal
// recorded by compare-and-set, no sandbox's lock taken).
func BenchmarkRenewingApply(b *testing.B) {
	benchConverged(b, []int{100, 1000}, func(b *testing.B, h *harness, n int) {
		h.clock.Advance(time.Minute)
		res, err := h.apply()
		if err != nil || !res.Plan.Empty() || len(res.Outcome.Leases) != n {
			b.Fatalf("apply: %v", err)
		}
	})
}

// BenchmarkStatus is `sbf status` of n converged sandboxes: a plan that
// writes nothing, and the rows.
func BenchmarkStatus(b *testing.B) {
	benchConverged(b, []int{10, 1000}, func(b *testing.B, h *harness, n int) {
		res, err := h.planWith(passOptions())
		if err != nil || len(res.Status()) != n {
			b.Fatalf("status: %v", err)
		}
	})
}

// BenchmarkFilesAfterNoopApplies is what 1,000 no-op applies of n
// sandboxes, a second apart (each renews every lease), leave in the state
// file, its journal and the host index: files-ratio is their bytes over
// the bytes they hold when written whole (issue 43: at most 2).
func BenchmarkFilesAfterNoopApplies(b *testing.B) {
	const applies = 1000
	for _, n := range []int{100} {
		b.Run(fmt.Sprintf("sandboxes=%d", n), func(b *testing.B) {
			for b.Loop() {
				h := newHarness(b, scaleSpec(n))
				h.eng.Parallelism, h.volatile = 8, true
				h.mustApply()
				for range applies {
					h.clock.Advance(time.Second)
					h.mustApply()
				}
				files := []string{filepath.Join(h.root, spec.Dir, state.FileName),
					filepath.Join(h.root, spec.Dir, state.JournalName), filepath.Join(h.hostDir, "instances.index")}
				used := sizes(b, files...)
				b.ReportMetric(float64(used), "files-B")
				b.ReportMetric(float64(used)/float64(liveBytes(b, h)), "files-ratio")
			}
		})
	}
}

// sizes adds the files' sizes (a missing one is 0).
func sizes(b *testing.B, paths ...string) int64 {
	var total int64
	for _, p := range paths {
		if info, err := os.Stat(p); err == nil {
			total += info.Size()
		}
	}
	return total
}

// liveBytes is what the state and the index hold, written whole.
func liveBytes(b *testing.B, h *harness) int64 {
	_, id, err := spec.WorkspaceIdentity(h.root)
	if err != nil {
		b.Fatal(err)
	}
	f, err := state.Read(filepath.Join(h.root, spec.Dir), h.root, id)
	if err != nil {
		b.Fatal(err)
	}
	var whole bytes.Buffer
	if err := statefile.Write(&whole, f); err != nil {
		b.Fatal(err)
	}
	entries, err := state.OpenHostIndex(h.hostDir).All()
	if err != nil {
		b.Fatal(err)
	}
	index, err := json.Marshal(entries)
	if err != nil {
		b.Fatal(err)
	}
	return int64(whole.Len() + len(index))
}
