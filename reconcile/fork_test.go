package reconcile

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/drivers/sim"
	"github.com/sandboxforge/sbf/internal/coded"
	"github.com/sandboxforge/sbf/internal/policy"
	"github.com/sandboxforge/sbf/sandbox"
	"github.com/sandboxforge/sbf/spec"
	"github.com/sandboxforge/sbf/state"
)

func (h *harness) fork(req ForkRequest) (*ForkResult, error) {
	return h.eng.Fork(context.Background(), h.ws(), req)
}

// leftNothing fails unless the world holds only want's instances, nothing
// but want is declared or recorded, and no saved fork state is left.
func (h *harness) leftNothing(t *testing.T, want ...string) {
	t.Helper()
	var insts []string
	for name := range h.world() {
		insts = append(insts, name)
	}
	var wantInsts []string
	for _, sb := range want {
		wantInsts = append(wantInsts, h.instance(sb))
	}
	slices.Sort(insts)
	slices.Sort(wantInsts)
	if !slices.Equal(insts, wantInsts) {
		t.Errorf("world %v, want %v", insts, wantInsts)
	}
	h.knowsOnly(t, want...)
	if left, _ := filepath.Glob(filepath.Join(h.simDir, "snapshots", ".work-*")); len(left) > 0 {
		t.Errorf("saved fork state left: %v", left)
	}
}

// knowsOnly fails unless nothing but want is declared or recorded.
func (h *harness) knowsOnly(t *testing.T, want ...string) {
	t.Helper()
	r, _ := h.eng.Load(h.ws())
	for name := range r.Config.Sandboxes {
		if !slices.Contains(want, name) {
			t.Errorf("%s is declared", name)
		}
	}
	for name := range h.state(t).Sandboxes {
		if !slices.Contains(want, name) {
			t.Errorf("%s is recorded", name)
		}
	}
}

func TestAForkMakesRunningChildrenFromTheSourcesStateWithoutABoot(t *testing.T) {
	h := newHarness(t, "[vm]\ndriver = \"sim\"\ncpus = 3\nmounts = [\"data\"]\n[sandboxes.api]\nports = [\"18080:80\"]\n")
	os.Mkdir(filepath.Join(h.root, "data"), 0o755)
	h.mustApply()
	h.guestRun(t, "api", "mkdir -p work && echo warm > work/a.txt")
	since := h.logLen()
	res, err := h.fork(ForkRequest{Source: "api", Count: 2, Audit: &Audit{Door: "cli", Tool: "fork"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Children) != 2 || res.Children[0].Sandbox != "api-fork-1" || res.Children[1].Sandbox != "api-fork-2" {
		t.Fatalf("children %+v", res.Children)
	}
	_, ops := h.mutations(since)
	var kinds []string
	for _, o := range ops[since:] {
		if o.Mutating() {
			kinds = append(kinds, o.Op)
		}
	}
	if got := strings.Join(kinds, " "); got != "fork-save fork-child fork-child fork-release" {
		t.Errorf("the fork did %q: the source saved once, each child started from it, no create or boot", got)
	}
	h.guestRun(t, "api-fork-1", "echo mine > work/a.txt")
	for sb, want := range map[string]string{"api": "warm", "api-fork-1": "mine", "api-fork-2": "warm"} {
		if got := h.guestRun(t, sb, "cat work/a.txt"); got != want {
			t.Errorf("%s reads %q, want %q", sb, got, want)
		}
	}
	a, b := h.guestRun(t, "api-fork-1", "cat etc/machine-id"), h.guestRun(t, "api-fork-2", "cat etc/machine-id")
	if a == b || len(a) != 32 {
		t.Errorf("two children share the machine id %s", a)
	}
	w := h.world()
	r, _ := h.eng.Load(h.ws())
	rec := h.state(t)
	for _, c := range res.Children {
		inst := w[c.Instance]
		if inst.Status != drivers.Running || inst.Reported.CPUs != 3 || len(inst.Reported.Ports) != 0 ||
			!slices.Equal(inst.Reported.Mounts, w[h.instance("api")].Reported.Mounts) {
			t.Errorf("%s in the world: %+v", c.Sandbox, inst)
		}
		if !r.AdHoc[c.Sandbox] || !r.Config.Leases[c.Sandbox].ExpiresAt.Equal(c.ExpiresAt) || c.ExpiresAt.IsZero() {
			t.Errorf("%s declared %v, lease %+v", c.Sandbox, r.AdHoc[c.Sandbox], r.Config.Leases[c.Sandbox])
		}
		if sb := rec.Sandboxes[c.Sandbox]; sb == nil || sb.Phase != "running" || sb.Instance != c.Instance {
			t.Errorf("%s recorded %+v", c.Sandbox, sb)
		}
		if e, ok := state.OpenHostIndex(h.hostDir).Lookup(c.Instance); !ok || !e.ExpiresAt.Equal(c.ExpiresAt) {
			t.Errorf("%s in the host index: %+v %v", c.Sandbox, e, ok)
		}
	}
	if p := h.plan(); !p.Empty() {
		t.Errorf("after the fork the plan is not empty: %+v %+v", p.Actions, p.Refresh)
	}
	events, _ := sandbox.WorkspaceHistory(h.root).Read(func(e sandbox.Event) bool { return e.Tool == "fork" }, 0)
	var lines []string
	for _, e := range events {
		lines = append(lines, e.Sandbox+":"+e.Detail+":"+e.ErrorCode)
	}
	if got := strings.Join(lines, " "); got != "api-fork-1:fork: api-fork-2:fork:" {
		t.Errorf("history %q", got)
	}
}

func TestAForkRefusedAtTheCapLeavesNothingBehind(t *testing.T) {
	h := newHarness(t, "[vm]\ndriver = \"sim\"\n[lease]\nmax_instances = 2\n[sandboxes.api]\n")
	h.mustApply()
	since := h.logLen()
	if _, err := h.fork(ForkRequest{Source: "api", Count: 2}); codeOf(err) != coded.InstanceLimit {
		t.Fatalf("a fork past max_instances: %v", err)
	}
	if n, ops := h.mutations(since); n != 0 {
		t.Errorf("a fork refused at the cap changed the world: %+v", ops[since:])
	}
	h.leftNothing(t, "api")
	// The places the refused fork held are free again at once.
	if res, err := h.fork(ForkRequest{Source: "api", Count: 1}); err != nil || len(res.Children) != 1 {
		t.Fatalf("a fork within the cap after a refusal: %v", err)
	}
}

func TestAFailedForkRemovesWhatItMade(t *testing.T) {
	h := newHarness(t, "[vm]\ndriver = \"sim\"\n[lease]\nmax_instances = 10\n[sandboxes.api]\n")
	h.mustApply()
	h.faults = "fork-child:api-fork-3=fail"
	res, err := h.fork(ForkRequest{Source: "api", Count: 3})
	if err == nil || len(res.Children) != 0 || !strings.Contains(err.Error(), "api-fork-3") {
		t.Fatalf("a fork whose third child failed: %v, kept %+v", err, res.Children)
	}
	h.leftNothing(t, "api")
	if w := h.world(); w[h.instance("api")].Status != drivers.Running {
		t.Errorf("the source after a failed fork: %+v", w[h.instance("api")])
	}
	h.faults = "fork-save:api=fail"
	if _, err := h.fork(ForkRequest{Source: "api", Count: 1}); err == nil {
		t.Fatal("a fork whose save failed succeeded")
	}
	h.leftNothing(t, "api")
}

func TestACancelledForkKeepsTheRunningChildrenAndUndoesTheRest(t *testing.T) {
	h := newHarness(t, "[vm]\ndriver = \"sim\"\n[lease]\nmax_instances = 10\n[sandboxes.api]\n")
	h.latency = "fork-child:api-fork-2=1h,fork-child:api-fork-3=1h" // still starting when the first runs
	h.mustApply()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ctx = WithEvents(ctx, func(ev Event) {
		if ev.Kind == ForkChild && ev.Done && ev.Sandbox == "api-fork-1" {
			cancel() // Ctrl-C, tasks/cancel: the first child runs, the others do not yet
		}
	})
	res, err := h.eng.Fork(ctx, h.ws(), ForkRequest{Source: "api", Count: 3})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("a cancelled fork: %v", err)
	}
	if len(res.Children) != 1 || res.Children[0].Sandbox != "api-fork-1" {
		t.Fatalf("kept %+v", res.Children)
	}
	h.leftNothing(t, "api", "api-fork-1")
	if got := h.guestRun(t, "api-fork-1", "echo alive"); got != "alive" {
		t.Errorf("the kept child answers %q", got)
	}
	if p := h.plan(); !p.Empty() {
		t.Errorf("after a cancelled fork the plan is not empty: %+v", p.Actions)
	}
}

// The children start at once: two run while the first is still starting
// (it would hold the others back for an hour if they started in turn).
func TestAForksChildrenStartAtOnce(t *testing.T) {
	h := newHarness(t, "[vm]\ndriver = \"sim\"\n[lease]\nmax_instances = 10\n[sandboxes.api]\n")
	h.latency = "fork-child:api-fork-1=1h"
	h.mustApply()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var mu sync.Mutex
	done := map[string]bool{}
	ctx = WithEvents(ctx, func(ev Event) {
		mu.Lock()
		defer mu.Unlock()
		if ev.Kind == ForkChild && ev.Done && ev.Err == nil {
			if done[ev.Sandbox] = true; done["api-fork-2"] && done["api-fork-3"] {
				cancel()
			}
		}
	})
	res, err := h.eng.Fork(ctx, h.ws(), ForkRequest{Source: "api", Count: 3})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("a fork cancelled once two children ran: %v", err)
	}
	var kept []string
	for _, c := range res.Children {
		kept = append(kept, c.Sandbox)
	}
	if !slices.Equal(kept, []string{"api-fork-2", "api-fork-3"}) {
		t.Fatalf("kept %v, want the two that ran while the first was starting", kept)
	}
	h.leftNothing(t, "api", "api-fork-2", "api-fork-3")
}

func TestAForksLeasesAreBoundedByTheOperatorsCeilings(t *testing.T) {
	h := newHarness(t, greedySpec+"[sandboxes.api]\nttl = \"30m\"\n")
	h.eng.Policy.Ceilings = policy.Ceilings{MaxTTL: policy.Ceiling[time.Duration]{Value: time.Hour,
		Source: "global config C [policy] max_ttl"}}
	h.mustApply()
	long := 2 * time.Hour
	if _, err := h.fork(ForkRequest{Source: "api", Count: 1, TTL: &long}); codeOf(err) != coded.TTLInvalid {
		t.Fatalf("a child's lease past the operator's max_ttl: %v", err)
	}
	h.leftNothing(t, "api")
	res, err := h.fork(ForkRequest{Source: "api", Count: 1})
	if err != nil || len(res.Children) != 1 || !res.Children[0].ExpiresAt.Equal(t0.Add(30*time.Minute)) {
		t.Fatalf("a child takes its source's lease length: %+v %v", res, err)
	}
	hour := time.Hour
	if res, err := h.fork(ForkRequest{Source: "api", Count: 1, TTL: &hour}); err != nil ||
		!res.Children[0].ExpiresAt.Equal(t0.Add(time.Hour)) {
		t.Fatalf("a lease at the ceiling: %+v %v", res, err)
	}
}

func TestForkRequestsTheEngineRefusesBeforeMakingAnything(t *testing.T) {
	h := newHarness(t, "[vm]\ndriver = \"sim\"\n[sandboxes.api]\n[sandboxes.web]\n")
	h.mustApply()
	since := h.logLen()
	for _, c := range []struct {
		req  ForkRequest
		code string
	}{
		{ForkRequest{}, coded.InvalidArguments},
		{ForkRequest{Source: "api"}, coded.InvalidArguments},
		{ForkRequest{Source: "api", Count: MaxForkChildren + 1}, coded.InvalidArguments},
		{ForkRequest{Source: "../etc", Count: 1}, coded.InvalidArguments},
		{ForkRequest{Source: "ghost", Count: 1}, coded.InstanceNotFound},
		{ForkRequest{Source: "api", Count: 1, NamePrefix: "../x"}, coded.InvalidArguments},
		{ForkRequest{Source: "api", Count: 1, NamePrefix: strings.Repeat("x", 39)}, coded.InvalidArguments},
	} {
		if _, err := h.fork(c.req); codeOf(err) != c.code {
			t.Errorf("%+v: %v (want %s)", c.req, err, c.code)
		}
	}
	h.eng.Drivers = func(name string, r *spec.Resolved) (Driver, error) {
		d, err := h.driver(name, r)
		if err != nil {
			return nil, err
		}
		return plainDriver{Driver: d, Execer: d.(drivers.Execer)}, nil
	}
	_, err := h.fork(ForkRequest{Source: "api", Count: 2})
	c := coded.Of(err, "")
	if c.Code != coded.ForkUnsupported || !strings.Contains(c.Message, "sbf clone api --snapshot") {
		t.Fatalf("a backend that cannot fork: %v", err)
	}
	if steps, _ := c.Details["next_steps"].([]string); len(steps) == 0 || !strings.Contains(steps[0], "snapshot") {
		t.Errorf("next steps %v", c.Details["next_steps"])
	}
	if n, ops := h.mutations(since); n != 0 {
		t.Errorf("refused forks changed the world: %+v", ops[since:])
	}
	h.leftNothing(t, "api", "web")
}

// Two forks of one source at once take turns on the source: the children's
// names are never given twice, and a fork the cap cannot hold whole makes
// none of its children.
func TestConcurrentForksNeverShareANameNorPassTheCap(t *testing.T) {
	h := newHarness(t, "[vm]\ndriver = \"sim\"\n[lease]\nmax_instances = 4\n[sandboxes.api]\n")
	h.eng.LockTimeout = time.Minute // the second fork waits for the first
	h.mustApply()
	errs := make(chan error, 2)
	for range 2 {
		go func() {
			_, err := h.fork(ForkRequest{Source: "api", Count: 2})
			errs <- err
		}()
	}
	var refused int
	for range 2 {
		switch err := <-errs; {
		case err == nil:
		case codeOf(err) == coded.InstanceLimit:
			refused++
		default:
			t.Fatal(err)
		}
	}
	if refused != 1 {
		t.Fatalf("%d of 2 forks refused at the cap, want 1", refused)
	}
	h.leftNothing(t, "api", "api-fork-1", "api-fork-2")
}

// egressSim enforces network policies for the sandboxes the files declare
// and refuses them for a fork's children, so a test sees whether a child
// keeps its source's policy and whether the fork asks before making it.
type egressSim struct{ *sim.Driver }

func (egressSim) EnforceEgress(_ context.Context, s drivers.Spec) error {
	if strings.Contains(s.Name, "-fork-") {
		return &drivers.PolicyError{Driver: "sim", Reason: "no proxy for children in this test"}
	}
	return nil
}

func TestAForkIsHeldToItsSourcesNetworkPolicy(t *testing.T) {
	h := newHarness(t, "[vm]\ndriver = \"sim\"\n[sandboxes.api]\n[sandboxes.api.network]\negress = \"deny\"\n")
	h.eng.Drivers = func(name string, r *spec.Resolved) (Driver, error) {
		d, err := h.driver(name, r)
		if err != nil {
			return nil, err
		}
		return egressSim{d.(*sim.Driver)}, nil
	}
	h.mustApply()
	since := h.logLen()
	_, err := h.fork(ForkRequest{Source: "api", Count: 2})
	if c := coded.Of(err, ""); c == nil || c.Code != coded.PolicyUnsupported || c.Details["egress"] != "deny" {
		t.Fatalf("a child whose source's policy the backend cannot enforce: %v", err)
	}
	if n, ops := h.mutations(since); n != 0 {
		t.Errorf("the refused fork changed the world: %+v", ops[since:])
	}
	h.leftNothing(t, "api")
}

// A dry run says what a fork would make, or refuses as the fork would,
// and makes, declares, records and writes into the history nothing.
func TestAForkDryRunMakesNothing(t *testing.T) {
	h := newHarness(t, "[vm]\ndriver = \"sim\"\n[lease]\nmax_instances = 10\n[sandboxes.api]\nttl = \"45m\"\n")
	h.mustApply()
	since := h.logLen()
	res, err := h.fork(ForkRequest{Source: "api", Count: 2, DryRun: true, Audit: &Audit{Door: "cli", Tool: "fork"}})
	if err != nil || len(res.Children) != 2 || res.Children[1].Sandbox != "api-fork-2" ||
		res.Children[1].Instance != h.instance("api-fork-2") || !res.Children[1].ExpiresAt.Equal(t0.Add(45*time.Minute)) {
		t.Fatalf("dry run: %+v %v", res, err)
	}
	h.eng.Drivers = func(name string, r *spec.Resolved) (Driver, error) {
		d, err := h.driver(name, r)
		if err != nil {
			return nil, err
		}
		return plainDriver{Driver: d, Execer: d.(drivers.Execer)}, nil
	}
	if _, err := h.fork(ForkRequest{Source: "api", Count: 1, DryRun: true}); codeOf(err) != coded.ForkUnsupported {
		t.Errorf("a dry run on a backend that cannot fork: %v", err)
	}
	if n, ops := h.mutations(since); n != 0 {
		t.Errorf("a dry run changed the world: %+v", ops[since:])
	}
	h.knowsOnly(t, "api")
	if events, _ := sandbox.WorkspaceHistory(h.root).Read(func(e sandbox.Event) bool { return e.Tool == "fork" },
		0); len(events) != 0 {
		t.Errorf("a dry run wrote history: %+v", events)
	}
}

// BenchmarkFork forks a sim sandbox holding 1 MiB in its guest folder into
// 4 children (destroying them again off the clock): the engine's own cost
// of a fork (checks, admission, records, history) over the sim's copies.
func BenchmarkFork(b *testing.B) {
	h := newHarness(b, "[vm]\ndriver = \"sim\"\n[lease]\nmax_instances = 10\n[sandboxes.api]\n")
	h.mustApply()
	d, _ := h.driver("sim", nil)
	os.MkdirAll(d.(*sim.Driver).GuestPath(h.instance("api"), "/work"), 0o755)
	os.WriteFile(d.(*sim.Driver).GuestPath(h.instance("api"), "/work/blob"), make([]byte, 1<<20), 0o644)
	b.ReportAllocs()
	for b.Loop() {
		res, err := h.fork(ForkRequest{Source: "api", Count: 4})
		if err != nil || len(res.Children) != 4 {
			b.Fatal(err)
		}
		b.StopTimer()
		var names []string
		for _, c := range res.Children {
			names = append(names, c.Sandbox)
		}
		if _, err := h.converge(Options{Intent: Destroy{Sandboxes: names, Force: true}}); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
}
