package reconcile

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sandboxforge/sbf/internal/clock"
)

// benchLatency is a VM's boot on the sim, in real time: creates take a
// second, starts a fifth of one.
const benchLatency = "create=1s,start=200ms"

// benchUp is `sbf up NAME` on the sim in real time, then the first
// command in the sandbox: what an agent waits for before it can work.
func benchUp(b *testing.B, h *harness, sandbox, want string) {
	b.Helper()
	res, err := h.up(sandbox)
	if err != nil {
		b.Fatalf("up %s: %v", sandbox, err)
	}
	if got := steps(res.Plan); got != sandbox+":"+want {
		b.Fatalf("up %s planned %s, want %s", sandbox, got, want)
	}
	tgt, err := h.eng.Target(h.ws(), sandbox)
	if err != nil {
		b.Fatal(err)
	}
	if r, err := tgt.Exec(context.Background(), execReq("echo ready")); err != nil || r.Stdout != "ready\n" {
		b.Fatalf("first exec in %s: %+v %v", sandbox, r, err)
	}
}

// BenchmarkCreateColdVsWarm is the adoption cost: `sbf up agent` up to
// its first command, booting a VM (cold) or adopting a ready spare of
// its shape (warm). The pool is filled before the timer runs, without
// latency: a spare's boot is the pool's cost, not the create's.
func BenchmarkCreateColdVsWarm(b *testing.B) {
	cold := "[vm]\ndriver = \"sim\"\ncpus = 2\n[lease]\nmax_instances = 20\n"
	for _, warm := range []bool{false, true} {
		name, text, want := "cold", cold, "create"
		if warm {
			name, text, want = "warm", poolSpec, "adopt"
		}
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				b.StopTimer()
				h := newHarness(b, text)
				if warm {
					h.fill()
				}
				h.latency, h.simClock = benchLatency, clock.Real{} // a benchmark of real time
				b.StartTimer()
				benchUp(b, h, "agent", want)
			}
		})
	}
}

// BenchmarkPoolWarmCreateDuringRefill shows that the loop refills a pool in
// the background without blocking creates: with the loop (Engine.Watch)
// running beside a pool of two, `sbf up a1` adopts a spare, the loop's
// refill starts booting its replacement (a second), and `sbf up a2`
// adopts the other spare while that boot is in flight. An op is the whole
// round, up to the refilled spare being ready; adopt-ms is a1's up and
// first command, during-refill-ms a2's, refill-ms the replacement's boot
// from a1's start.
func BenchmarkPoolWarmCreateDuringRefill(b *testing.B) {
	text := strings.Replace(poolSpec, "size = 1", "size = 2", 1)
	var adopt, during, refill time.Duration
	for b.Loop() {
		b.StopTimer()
		h := newHarness(b, text)
		h.fill()
		h.latency, h.simClock = benchLatency, clock.Real{}
		pools, stop := h.watchPools(b)
		// The loop's first pool pass finds the pool full.
		if res := waitPool(b, pools); res == nil || len(res.Plan.Actions) != 0 {
			b.Fatalf("first pool pass: %+v", res)
		}
		b.StartTimer()

		start := time.Now()
		benchUp(b, h, "a1", "adopt")
		adopt += time.Since(start)
		// The refill reserves its spare's name before it boots it.
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
			if m, _ := filepath.Glob(filepath.Join(h.hostDir, "reservations", "sbf-pool-*.lock")); len(m) > 0 {
				break
			}
			if time.Now().After(deadline) {
				b.Fatal("the loop did not start a refill after the adoption")
			}
		}
		mid := time.Now()
		benchUp(b, h, "a2", "adopt")
		during += time.Since(mid)
		for name, inst := range h.world() {
			if l := inst.Label; l != nil && l.Spare != nil && l.Owner == nil {
				b.Fatalf("the refill made %s ready before the create during it returned", name)
			}
		}
		if res := waitPool(b, pools); res == nil || steps(res.Plan) != "pool.small:create" {
			b.Fatalf("refill: %+v", res)
		}
		refill += time.Since(start)

		b.StopTimer()
		stop() // the second refill (for a2's spare) is cut off
		b.StartTimer()
	}
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) / float64(b.N) }
	b.ReportMetric(ms(adopt), "adopt-ms/op")
	b.ReportMetric(ms(during), "during-refill-ms/op")
	b.ReportMetric(ms(refill), "refill-ms/op")
	if during >= refill-adopt {
		b.Errorf("a create during the refill took %s of the refill's %s: it waited for it", during, refill)
	}
}

func waitPool(b *testing.B, pools <-chan *Result) *Result {
	b.Helper()
	select {
	case res := <-pools:
		return res
	case <-time.After(30 * time.Second):
		b.Fatal("no pool pass")
	}
	return nil
}
