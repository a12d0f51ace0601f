package reconcile

import (
	"fmt"
	"strings"
	"testing"
	"time"
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

// BenchmarkNoopApply is `sbf apply` of n converged sandboxes.
func BenchmarkNoopApply(b *testing.B) {
	for _, n := range []int{10, 100, 1000} {
		b.Run(fmt.Sprintf("sandboxes=%d", n), func(b *testing.B) {
			h := newHarness(b, scaleSpec(n))
			h.eng.Parallelism, h.volatile = 8, true
			h.mustApply()
			cpu := cpuTime()
			for b.Loop() {
				if res, err := h.apply(); err != nil || !res.Plan.Empty() {
					b.Fatalf("apply: %v", err)
				}
			}
			b.ReportMetric(float64((cpuTime()-cpu).Microseconds())/float64(b.N)/1000, "cpu-ms/op")
		})
	}
}

// BenchmarkStatus is `sbf status` of n converged sandboxes: a plan that
// writes nothing, and the rows.
func BenchmarkStatus(b *testing.B) {
	for _, n := range []int{10, 1000} {
		b.Run(fmt.Sprintf("sandboxes=%d", n), func(b *testing.B) {
			h := newHarness(b, scaleSpec(n))
			h.eng.Parallelism, h.volatile = 8, true
			h.mustApply()
			cpu := cpuTime()
			for b.Loop() {
				res, err := h.planWith(passOptions())
				if err != nil || len(res.Status()) != n {
					b.Fatalf("status: %v", err)
				}
			}
			b.ReportMetric(float64((cpuTime()-cpu).Microseconds())/float64(b.N)/1000, "cpu-ms/op")
		})
	}
}
