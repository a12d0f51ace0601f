package cli

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// BenchmarkConcurrentUpProcesses is issue 43's "50 concurrent `sbf up` ≤ 3×
// one": 50 `sbf up NAME` processes started at once, each for a sandbox of
// its own in one workspace, against one `sbf up` alone in a workspace of
// the same spec, on the sim with real latencies (create 300 ms, start
// 200 ms). fifty-x-one is the wall time of the fifty over the one's; p50
// and p99 are each process's own.
func BenchmarkConcurrentUpProcesses(b *testing.B) {
	const n = 50
	var text strings.Builder
	fmt.Fprintf(&text, "%s[lease]\nmax_instances = %d\n", simSpec, n+10)
	for i := range n {
		fmt.Fprintf(&text, "[sandboxes.sb%02d]\n", i)
	}
	env := append([]string{"SBF_SIM_LATENCY=create=300ms,start=200ms"}, volatileSim...)
	var one, fifty time.Duration
	var each []time.Duration
	for b.Loop() {
		b.StopTimer()
		alone, together := newSimWorkspace(b, text.String()), newSimWorkspace(b, text.String())
		b.StartTimer()
		one += upAll(b, alone, env, 1)[0]
		start := time.Now()
		each = append(each, upAll(b, together, env, n)...)
		fifty += time.Since(start)
	}
	slices.Sort(each)
	b.ReportMetric(float64(one.Milliseconds())/float64(b.N), "one-ms")
	b.ReportMetric(float64(fifty.Milliseconds())/float64(b.N), "fifty-ms")
	b.ReportMetric(float64(fifty)/float64(one), "fifty-x-one")
	b.ReportMetric(float64(each[len(each)/2].Milliseconds()), "p50-ms")
	b.ReportMetric(float64(each[len(each)*99/100].Milliseconds()), "p99-ms")
}

// upAll runs `sbf up sbNN` for the first n sandboxes at once and returns
// how long each process took; any failure fails the benchmark.
func upAll(b *testing.B, w *simWorkspace, env []string, n int) []time.Duration {
	took := make([]time.Duration, n)
	errs := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			start := time.Now()
			if r := w.run(env, "up", "--auto-approve", fmt.Sprintf("sb%02d", i)); r.code != 0 {
				errs[i] = fmt.Sprintf("sbf up sb%02d: exit %d: %s", i, r.code, r.stderr)
			}
			took[i] = time.Since(start)
		})
	}
	wg.Wait()
	for _, e := range errs {
		if e != "" {
			b.Fatal(e)
		}
	}
	return took
}
