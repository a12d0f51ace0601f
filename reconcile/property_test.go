package reconcile

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/sandboxforge/sbf/drivers"
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
	if r := waitPass(); len(r.Plan.Actions) != 1 || r.Plan.Actions[0].Sandbox != "short" || r.Plan.Actions[0].Kind != Expire {
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
