package reconcile

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/sandboxforge/sbf/internal/clock"
	"github.com/sandboxforge/sbf/internal/coded"
)

// BenchmarkConcurrentCreates is 50 create_instance calls at once: 50
// callers each lease one ad-hoc sandbox in a workspace whose [lease]
// max_instances is 5, on the sim with real latencies (create 300 ms,
// start 200 ms). Five fit; the others must be refused quickly, not queue
// behind the five. It reports each call's latency as p50 and p99, the
// refusals' alone (refused-p50-ms, refused-p99-ms: the p99 of all calls is
// an admitted create's, which waits out the sim's latencies), and how many
// were admitted.
func BenchmarkConcurrentCreates(b *testing.B) {
	const callers = 50
	var all, refused []time.Duration
	admitted := 0
	for b.Loop() {
		b.StopTimer()
		h := newHarness(b, "[vm]\ndriver = \"sim\"\n[lease]\nmax_instances = 5\n")
		h.latency, h.simClock, h.volatile = "create=300ms,start=200ms", clock.Real{}, true
		h.eng.LockTimeout = 5 * time.Minute
		b.StartTimer()
		lat := make([]time.Duration, callers)
		errs := make([]error, callers)
		var wg sync.WaitGroup
		for i := range callers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				name := fmt.Sprintf("inst_%08d", i)
				start := time.Now()
				_, errs[i] = h.converge(Options{Targets: []string{name},
					Intent: Up{Sandboxes: []string{name}}})
				lat[i] = time.Since(start)
			}()
		}
		wg.Wait()
		for i, err := range errs {
			var ce *coded.Error
			switch {
			case err == nil:
				admitted++
			case !errors.As(err, &ce) || ce.Code != coded.InstanceLimit:
				b.Fatalf("a create failed otherwise than at the cap: %v", err)
			default:
				refused = append(refused, lat[i])
			}
		}
		all = append(all, lat...)
	}
	slices.Sort(all)
	b.ReportMetric(float64(all[len(all)/2].Milliseconds()), "p50-ms")
	b.ReportMetric(float64(all[len(all)*99/100].Milliseconds()), "p99-ms")
	if len(refused) > 0 {
		slices.Sort(refused)
		b.ReportMetric(float64(refused[len(refused)/2].Milliseconds()), "refused-p50-ms")
		b.ReportMetric(float64(refused[len(refused)*99/100].Milliseconds()), "refused-p99-ms")
	}
	b.ReportMetric(float64(admitted)/float64(b.N), "admitted/op")
}
