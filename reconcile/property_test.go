package reconcile

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sandboxforge/sbf/reconcile/plan"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/drivers/sim"
	"github.com/sandboxforge/sbf/internal/testutil"
	"github.com/sandboxforge/sbf/spec"
)

// randomSpec declares 1–5 sandboxes with random sizes and lease lengths.
func randomSpec(rng *rand.Rand) (string, map[string]int) {
	var b strings.Builder
	b.WriteString("[vm]\ndriver = \"sim\"\n[lease]\nmax_instances = 50\n")
	want := map[string]int{}
	for i := 0; i < 1+rng.IntN(5); i++ {
		name := fmt.Sprintf("sb%d", rng.IntN(8))
		cpus := 1 + rng.IntN(4)
		if _, dup := want[name]; dup {
			continue
		}
		want[name] = cpus
		fmt.Fprintf(&b, "[sandboxes.%s]\ncpus = %d\nttl = \"%dm\"\n", name, cpus, 10+10*rng.IntN(6))
	}
	return b.String(), want
}

// randomFaults fails some operations a bounded number of times, so a
// finite number of retries always converges.
func randomFaults(rng *rand.Rand) string {
	var rules []string
	for _, op := range []string{"create", "start", "stop", "delete", "reconfigure"} {
		if rng.IntN(3) == 0 {
			target := "*"
			if rng.IntN(2) == 0 {
				target = fmt.Sprintf("sb%d", rng.IntN(8))
			}
			rules = append(rules, fmt.Sprintf("%s:%s=fail:%d", op, target, 1+rng.IntN(2)))
		}
	}
	return strings.Join(rules, ",")
}

// applyUntilConverged retries apply as a person (or the loop) would.
func applyUntilConverged(t *testing.T, h *harness) {
	t.Helper()
	var err error
	for attempt := 0; attempt < 12; attempt++ {
		if _, err = h.apply(); err == nil {
			return
		}
	}
	t.Fatalf("apply did not converge after 12 attempts: %v", err)
}

func checkWorldMatches(t *testing.T, h *harness, want map[string]int) {
	t.Helper()
	if p := h.plan(); !p.Empty() {
		t.Fatalf("plan after convergence is not empty: %+v %+v", p.Actions, p.Refresh)
	}
	world := h.world()
	var got, exp []string
	for name, inst := range world {
		if inst.Status != drivers.Running {
			t.Errorf("%s is %s", name, inst.Status)
		}
		got = append(got, name)
	}
	for name, cpus := range want {
		inst := h.instance(name)
		exp = append(exp, inst)
		if world[inst].Reported.CPUs != cpus {
			t.Errorf("%s has %d cpus, want %d", inst, world[inst].Reported.CPUs, cpus)
		}
	}
	sort.Strings(got)
	sort.Strings(exp)
	if strings.Join(got, ",") != strings.Join(exp, ",") {
		t.Fatalf("world %v, want %v (a leak or a missing sandbox)", got, exp)
	}
}

// TestPropertyConvergence: for random specs, faults, edits and clocks,
// apply converges, the next plan is empty, nothing leaks, and expiry
// removes exactly the sandboxes whose lease ran out.
func TestPropertyConvergence(t *testing.T) {
	seeds := 25
	if testing.Short() {
		seeds = 5
	}
	for seed := 0; seed < seeds; seed++ {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(seed), 7))
			text, want := randomSpec(rng)
			h := newHarness(t, text)
			for round := 0; round < 3; round++ {
				h.faults = randomFaults(rng)
				applyUntilConverged(t, h)
				h.faults = ""
				checkWorldMatches(t, h, want)
				text, want = randomSpec(rng)
				h.writeSpec(text)
				h.clock.Advance(time.Duration(rng.IntN(5)) * time.Minute)
			}
			h.faults = randomFaults(rng)
			h.clock.Advance(time.Duration(10+rng.IntN(60)) * time.Minute)
			for attempt := 0; attempt < 12; attempt++ {
				if _, err := h.reconcile(); err == nil {
					break
				}
			}
			h.faults = ""
			r, _ := spec.Load(h.ws())
			now := h.clock.Now()
			world := h.world()
			for name := range r.Config.Sandboxes {
				l, leased := r.Config.Leases[name]
				_, exists := world[h.instance(name)]
				if wanted := leased && now.Before(l.ExpiresAt); wanted != exists {
					t.Errorf("%s: wanted (declared, live lease) = %v but instance exists = %v", name, wanted, exists)
				}
			}
			for name := range world {
				if _, sb, _ := drivers.ParseInstanceName(name); r.Config.Sandboxes[sb].CPUs == 0 {
					t.Errorf("%s exists but %s is not declared", name, sb)
				}
			}
		})
	}
}

// TestWatchWakesAtLeaseEnd: the loop sleeps until the earliest lease end,
// not a full interval, so no lease outlives its expiry by more than one
// pass.
func TestWatchWakesAtLeaseEnd(t *testing.T) {
	h := newHarness(t, "[vm]\ndriver = \"sim\"\n[sandboxes.short]\nttl = \"10m\"\n[sandboxes.long]\nttl = \"40m\"\n")
	h.mustApply()
	ctx, cancel := context.WithCancel(context.Background())
	passes := make(chan *Result, 10)
	done := make(chan error, 1)
	go func() {
		done <- h.eng.Watch(ctx, WatchOptions{
			Workspaces: func() []spec.Options { return []spec.Options{h.ws()} },
			Interval:   time.Hour,
			Report: func(_ spec.Options, res *Result, err error) {
				if err != nil {
					t.Errorf("pass: %v", err)
				}
				passes <- res
			},
		})
	}()
	waitPass := func() *Result {
		select {
		case r := <-passes:
			return r
		case <-time.After(10 * time.Second):
			t.Fatal("no reconcile pass")
			return nil
		}
	}
	waitAsleep := func() {
		for deadline := time.Now().Add(10 * time.Second); h.clock.Waiters() == 0; {
			if time.Now().After(deadline) {
				t.Fatal("the loop never went to sleep")
			}
			time.Sleep(time.Millisecond)
		}
	}
	waitPass()
	waitAsleep()
	h.clock.Advance(10 * time.Minute) // short's lease end, far before the 1h interval
	if r := waitPass(); len(r.Plan.Actions) != 1 || r.Plan.Actions[0].Sandbox != "short" ||
		r.Plan.Actions[0].Kind != plan.Expire {
		t.Fatalf("pass at short's expiry: %+v", r.Plan.Actions)
	}
	if _, ok := h.world()[h.instance("short")]; ok {
		t.Fatal("short outlived its lease")
	}
	waitAsleep()
	h.clock.Advance(30 * time.Minute)
	if r := waitPass(); len(r.Plan.Actions) != 1 || r.Plan.Actions[0].Sandbox != "long" {
		t.Fatalf("pass at long's expiry: %+v", r.Plan.Actions)
	}
	waitAsleep()
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Watch returned %v", err)
	}
}

// A workspace whose sandbox takes 10 (simulated) minutes to create does
// not delay a lease expiry in another workspace served by the same loop.
func TestSlowWorkspaceDoesNotDelayAnotherExpiry(t *testing.T) {
	b := newHarness(t, "[vm]\ndriver = \"sim\"\n[sandboxes.quick]\nttl = \"1m\"\n")
	b.mustApply()
	a := newHarness(t, "[vm]\ndriver = \"sim\"\n[sandboxes.slow]\nttl = \"1h\"\n")
	a.clock, a.simDir = b.clock, b.simDir // one host: one clock, one world
	// slow holds a lease its VM does not have yet: the loop must create it.
	testutil.WriteFile(t, filepath.Join(a.root, spec.Dir, spec.OverridesFile), fmt.Sprintf(
		"[leases.slow]\nacquired_at = %s\nexpires_at = %s\n", t0.Format(time.RFC3339),
		t0.Add(time.Hour).Format(time.RFC3339)))
	b.eng.Drivers = func(name string, r *spec.Resolved) (Driver, error) {
		latency := ""
		if r != nil && r.Root == a.root {
			latency = "create=10m"
		}
		return sim.New(sim.Options{Dir: b.simDir, Latency: latency, Clock: b.clock})
	}
	loop := startLoop(t, b.eng, b.clock, WatchOptions{
		Workspaces: func() []spec.Options { return []spec.Options{a.ws(), b.ws()} },
		Interval:   time.Hour,
	})
	defer func() { // the loop ends once slow's create has finished
		loop.cancel()
		b.clock.Advance(10 * time.Minute)
		loop.stop()
	}()
	// Asleep: the loop waits for quick's lease end with slow's pass running
	// (its timeout waits too), the sim on slow's create.
	loop.waitFor("quick's lease end while slow's create waits", func(until time.Time, running int) bool {
		return running == 1 && until.Equal(t0.Add(time.Minute)) && b.clock.Waiters() >= 3
	})
	b.clock.Advance(time.Minute)
	for deadline := time.After(10 * time.Second); ; {
		if _, alive := b.world()[b.instance("quick")]; !alive {
			break
		}
		select {
		case <-deadline:
			t.Fatal("quick outlived its lease while slow was being created")
		case <-time.After(5 * time.Millisecond):
		}
	}
	if _, made := b.world()[a.instance("slow")]; made {
		t.Error("slow's 10-minute create finished after one minute")
	}
}

// watchCounting runs the loop over one workspace and counts its passes.
func watchCounting(t *testing.T, h *harness, interval time.Duration) (passes func() int, stop func()) {
	var mu sync.Mutex
	n := 0
	loop := startLoop(t, h.eng, h.clock, WatchOptions{
		Workspaces: func() []spec.Options { return []spec.Options{h.ws()} },
		Interval:   interval,
		Report:     func(spec.Options, *Result, error) { mu.Lock(); n++; mu.Unlock() },
	})
	passes = func() int {
		loop.settle()
		mu.Lock()
		defer mu.Unlock()
		return n
	}
	return passes, loop.stop
}

// Failed passes back off exponentially (5 s, 10 s, 20 s, …) instead of
// retrying at a fixed interval.
func TestWatchBacksOffOnErrors(t *testing.T) {
	h := newHarness(t, "[vm]\ndriver = \"sim\"\n[sandboxes.api]\n")
	h.faults = "list:*=fail" // every pass fails to observe
	passes, stop := watchCounting(t, h, time.Hour)
	defer stop()
	var got []int
	for _, step := range []time.Duration{0, 5 * time.Second, 5 * time.Second, 5 * time.Second, 20 * time.Second} {
		h.clock.Advance(step)
		got = append(got, passes())
	}
	if fmt.Sprint(got) != "[1 2 2 3 4]" {
		t.Errorf("passes after 0, 5, 10, 15, 35 s = %v; want a retry at 5 s, 15 s and 35 s", got)
	}
}

// An invalid configuration is not retried until its files change.
func TestWatchWaitsForInvalidFilesToChange(t *testing.T) {
	h := newHarness(t, "[vm]\ndriver = \"sim\"\ncpus = 0\n[sandboxes.api]\n")
	passes, stop := watchCounting(t, h, time.Minute)
	defer stop()
	if n := passes(); n != 1 {
		t.Fatalf("first passes: %d", n)
	}
	for range 5 {
		h.clock.Advance(time.Minute)
	}
	if n := passes(); n != 1 {
		t.Errorf("an unchanged invalid workspace was retried: %d passes", n)
	}
	h.writeSpec("[vm]\ndriver = \"sim\"\n[sandboxes.api]\n")
	h.clock.Advance(time.Minute)
	if n := passes(); n != 2 {
		t.Errorf("the fixed workspace was not retried: %d passes", n)
	}
}
