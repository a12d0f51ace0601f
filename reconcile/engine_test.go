package reconcile

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sandboxforge/sbf/reconcile/plan"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/drivers/sim"
	"github.com/sandboxforge/sbf/internal/coded"
	"github.com/sandboxforge/sbf/spec"
	"github.com/sandboxforge/sbf/state"
)

const twoSandboxes = `
[vm]
driver = "sim"
cpus = 2
[sandboxes.api]
[sandboxes.web]
cpus = 4
`

func TestApplyConvergesAndReapplyDoesNothing(t *testing.T) {
	h := newHarness(t, twoSandboxes)
	if got := len(h.plan().Actions); got != 2 {
		t.Fatalf("first plan has %d actions, want 2 creates", got)
	}
	res := h.mustApply()
	if s := res.Plan.Summary(); s.Add != 2 {
		t.Errorf("summary = %+v", s)
	}
	world := h.world()
	if len(world) != 2 || world[h.instance("web")].Reported.CPUs != 4 ||
		world[h.instance("api")].Status != drivers.Running {
		t.Fatalf("world = %+v", world)
	}
	mark := h.logLen()
	h.clock.Advance(time.Minute)
	res = h.mustApply()
	if !res.Plan.Empty() {
		t.Errorf("second apply planned %+v", res.Plan)
	}
	if n, _ := h.mutations(mark); n != 0 {
		t.Errorf("a converged apply made %d mutating driver calls", n)
	}
	st := res.recorded.Sandboxes["api"]
	if st.Phase != state.Running || st.VM == nil || st.VM.CPUs != 2 || st.Instance != h.instance("api") {
		t.Errorf("record = %+v", st)
	}
}

func TestLeaseExpiryDeletesTheVM(t *testing.T) {
	h := newHarness(t, twoSandboxes)
	h.mustApply()
	h.clock.Advance(29 * time.Minute)
	if res, err := h.reconcile(); err != nil || !res.Plan.Empty() {
		t.Fatalf("before expiry: %v %+v", err, res.Plan)
	}
	h.clock.Advance(time.Minute) // exactly the default 30m lease
	res, err := h.reconcile()
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Plan.Actions) != 2 || res.Plan.Actions[0].Kind != plan.Expire {
		t.Fatalf("plan = %+v", res.Plan.Actions)
	}
	if w := h.world(); len(w) != 0 {
		t.Errorf("world after expiry = %v", w)
	}
	for _, name := range []string{"api", "web"} {
		if p := res.recorded.Sandboxes[name].Phase; p != state.Expired {
			t.Errorf("%s phase = %s", name, p)
		}
	}
	// Reconcile never renews: the expired sandboxes stay gone, even when
	// the clock reads earlier than the lease end they expired at (a clock
	// stepped back; SBF_NOW in the past).
	h.clock.Advance(time.Minute)
	if res, err := h.reconcile(); err != nil || !res.Plan.Empty() {
		t.Errorf("after expiry: %v %+v", err, res.Plan)
	}
	h.clock.Advance(-10 * time.Minute)
	if res, err := h.reconcile(); err != nil || len(res.Plan.Actions) != 0 {
		t.Errorf("with the clock back before the lease end: %v %+v", err, res.Plan.Actions)
	}
	h.clock.Advance(10 * time.Minute)
	// apply acquires new leases and brings them back.
	if res := h.mustApply(); res.Plan.Summary().Add != 2 {
		t.Errorf("apply after expiry: %+v", res.Plan.Actions)
	}
}

func TestFailedExpiryIsRetriedAndNeverMarkedExpired(t *testing.T) {
	h := newHarness(t, twoSandboxes)
	h.mustApply()
	h.clock.Advance(time.Hour)
	h.faults = "delete:api=fail:1"
	res, err := h.reconcile()
	if err == nil || !strings.Contains(err.Error(), "sandbox api: expire") {
		t.Fatalf("err = %v, want api's expiry to fail", err)
	}
	if p := res.recorded.Sandboxes["api"].Phase; p == state.Expired {
		t.Fatal("api marked expired while its VM still exists")
	}
	if _, ok := h.world()[h.instance("api")]; !ok {
		t.Fatal("api's VM vanished although delete failed")
	}
	if p := res.recorded.Sandboxes["web"].Phase; p != state.Expired {
		t.Errorf("web = %s: one sandbox's failure stopped another", p)
	}
	res, err = h.reconcile()
	if err != nil || res.recorded.Sandboxes["api"].Phase != state.Expired || len(h.world()) != 0 {
		t.Errorf("retry: err %v, phase %s, world %v", err, res.recorded.Sandboxes["api"].Phase, h.world())
	}
}

func TestFailuresAreJoinedPerSandbox(t *testing.T) {
	h := newHarness(t, twoSandboxes)
	h.faults = "create:*=fail"
	_, err := h.apply()
	if err == nil || !strings.Contains(err.Error(), "sandbox api: create") ||
		!strings.Contains(err.Error(), "sandbox web: create") {
		t.Fatalf("err = %v, want both failures", err)
	}
	st, _ := state.Read(filepath.Join(h.root, spec.Dir), h.root, "")
	if st.Sandboxes["api"].Phase != state.Failed || st.Sandboxes["api"].LastError == "" {
		t.Errorf("record = %+v", st.Sandboxes["api"])
	}
	h.faults = ""
	if res := h.mustApply(); res.Plan.Summary().Add != 2 || res.recorded.Sandboxes["api"].LastError != "" {
		t.Errorf("retry: %+v %+v", res.Plan.Actions, res.recorded.Sandboxes["api"])
	}
}

func TestDriftIsRecreatedAndLostStateIsRebuilt(t *testing.T) {
	h := newHarness(t, twoSandboxes)
	h.mustApply()
	os.Remove(filepath.Join(h.simDir, "instances", h.instance("api")+".json")) // deleted behind sbf's back
	p := h.plan()
	if len(p.Actions) != 1 || p.Actions[0].Kind != plan.Create || !p.Actions[0].Drift {
		t.Fatalf("plan = %+v", p.Actions)
	}
	h.mustApply()

	os.Remove(filepath.Join(h.root, spec.Dir, state.FileName))
	mark := h.logLen()
	res := h.mustApply()
	if n, _ := h.mutations(mark); n != 0 || len(res.Plan.Refresh) != 2 {
		t.Fatalf("rebuilding lost state: %d mutations, refresh %+v", n, res.Plan.Refresh)
	}
	if res.recorded.Sandboxes["web"].Phase != state.Running || res.recorded.Sandboxes["web"].VM.CPUs != 4 {
		t.Errorf("adopted record = %+v", res.recorded.Sandboxes["web"])
	}
	if p := h.plan(); !p.Empty() {
		t.Errorf("plan after adoption = %+v", p)
	}
}

func TestUnmanagedInstancesAreNeverTouched(t *testing.T) {
	h := newHarness(t, twoSandboxes)
	d, _ := sim.New(sim.Options{Dir: h.simDir})
	ctx := context.Background()
	foreign := []string{"my-own-vm", "sbf-89abcdef-api", "agent-1a2b3c4d"}
	for _, n := range foreign {
		d.Create(ctx, drivers.Spec{Name: n})
	}
	mark := h.logLen()
	h.mustApply()
	h.converge(Options{Intent: Destroy{All: true}})
	h.clock.Advance(48 * time.Hour)
	h.mustApply()
	h.reconcile()
	_, ops := h.mutations(mark)
	for _, o := range ops[mark:] {
		for _, n := range foreign {
			if o.Instance == n {
				t.Errorf("%s was touched: %+v", n, o)
			}
		}
	}
	if w := h.world(); len(w) < len(foreign) {
		t.Errorf("world = %v", w)
	}
}

func TestDestroyAndAdHocSandboxes(t *testing.T) {
	h := newHarness(t, twoSandboxes)
	up := Up{Sandboxes: []string{"scratch"}, TTL: TTL(10 * time.Minute)}
	if _, err := h.converge(Options{Targets: []string{"scratch"}, Intent: up}); err != nil {
		t.Fatal(err)
	}
	m, _ := spec.ReadManaged(h.root)
	if !m.Declares("scratch") {
		t.Fatal("up did not declare the ad-hoc sandbox")
	}
	if l, _ := m.Lease("scratch"); !l.ExpiresAt.Equal(t0.Add(10 * time.Minute)) {
		t.Errorf("lease = %+v", l)
	}
	if _, ok := h.world()[h.instance("scratch")]; !ok || len(h.world()) != 1 {
		t.Fatalf("world = %v, want only scratch", h.world())
	}
	// apply does not renew an ad-hoc lease...
	h.mustApply()
	h.clock.Advance(11 * time.Minute)
	res := h.mustApply()
	if len(res.Plan.Actions) != 1 || res.Plan.Actions[0].Kind != plan.Expire ||
		res.Plan.Actions[0].Sandbox != "scratch" {
		t.Errorf("apply past the ad-hoc lease: %+v", res.Plan.Actions)
	}
	// ...and destroy forgets it entirely.
	if _, err := h.converge(Options{Intent: Destroy{All: true}}); err != nil {
		t.Fatal(err)
	}
	m, _ = spec.ReadManaged(h.root)
	if m.Declares("scratch") || len(h.world()) != 0 {
		t.Errorf("after destroy: declared %v, world %v", m.Declares("scratch"), h.world())
	}
	if _, err := h.converge(Options{Intent: Destroy{Sandboxes: []string{"nope"}}}); err == nil {
		t.Error("destroying an unknown sandbox succeeded")
	}
}

func TestExtendBounds(t *testing.T) {
	h := newHarness(t, twoSandboxes+"[lease]\nmax_ttl = \"1h\"\nmax_lifetime = \"2h\"\n")
	h.mustApply() // leases end at t0+30m
	code := func(err error) string { return coded.Of(err, coded.Unknown).Code }
	if _, err := h.converge(Options{Intent: Extend{Sandbox: "api", By: 2 * time.Hour}}); code(err) != coded.TTLInvalid {
		t.Errorf("extension past max_ttl: %v", err)
	}
	for i := 0; i < 1; i++ {
		if _, err := h.converge(Options{Intent: Extend{Sandbox: "api", By: time.Hour}}); err != nil {
			t.Fatal(err)
		}
	}
	m, _ := spec.ReadManaged(h.root)
	if l, _ := m.Lease("api"); !l.ExpiresAt.Equal(t0.Add(90 * time.Minute)) {
		t.Errorf("extended lease = %+v", l)
	}
	_, err := h.converge(Options{Intent: Extend{Sandbox: "api", By: time.Hour}})
	var e *coded.Error
	if !errors.As(err, &e) || e.Code != coded.TTLInvalid || e.Details["max_lifetime_minutes"] != 120.0 {
		t.Errorf("extension past max_lifetime: %#v", err)
	}
	h.clock.Advance(31 * time.Minute)
	_, err = h.converge(Options{Intent: Extend{Sandbox: "web", By: time.Minute}})
	if code(err) != coded.InstanceTerminal {
		t.Errorf("extending an expired lease: %v", err)
	}
}

func TestInstanceCapCountsTheHostAndSkipsExpired(t *testing.T) {
	h := newHarness(t, twoSandboxes+"[lease]\nmax_instances = 1\n")
	_, err := h.apply()
	var e *coded.Error
	if !errors.As(err, &e) || e.Code != coded.InstanceLimit || e.Details["max_instances"] != 1 ||
		e.Details["active_instances"] != 1 {
		t.Fatalf("err = %#v", err)
	}
	if len(h.world()) != 1 {
		t.Fatalf("world = %v, want exactly the one admitted", h.world())
	}
	// An instance whose lease has expired no longer counts, even before
	// the loop deletes it.
	h.writeSpec("[vm]\ndriver = \"sim\"\n[sandboxes.api]\n[sandboxes.web]\nttl = \"10m\"\n[lease]\nmax_instances = 1\n")
	h.converge(Options{Intent: Destroy{All: true}})
	if _, err := h.converge(Options{Targets: []string{"web"}, Intent: Renew{Sandboxes: []string{"web"}}}); err != nil {
		t.Fatal(err)
	}
	h.clock.Advance(11 * time.Minute)
	if _, err := h.converge(Options{Targets: []string{"api"}, Intent: Renew{Sandboxes: []string{"api"}}}); err != nil {
		t.Errorf("web's expired lease still counted: %v", err)
	}
}

func TestSavedPlanRefusesWhenStale(t *testing.T) {
	h := newHarness(t, twoSandboxes)
	res, err := h.planWith(Options{Intent: Renew{All: true}})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(h.root, "plan.json")
	if err := res.Save(path, nil, t0); err != nil {
		t.Fatal(err)
	}
	saved, err := ReadSavedPlan(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.converge(Options{Intent: Renew{All: true}, Saved: saved}); err != nil {
		t.Fatalf("fresh saved plan: %v", err)
	}
	_, err = h.converge(Options{Intent: Renew{All: true}, Saved: saved})
	if c := coded.Of(err, coded.Unknown).Code; c != coded.StalePlan ||
		!strings.Contains(err.Error(), "saved plan is stale") {
		t.Errorf("reused plan: %v", err)
	}
}

// A plan names the sandbox whose backend cannot be used; an apply fails
// before writing anything: no lease, no state folder (as root, a
// .sandboxforge/ owned by root would block the unprivileged retry).
func TestUnavailableDriverIsAProblemNotAGuess(t *testing.T) {
	h := newHarness(t, "[vm]\ndriver = \"lima\"\n[sandboxes.api]\n")
	res, err := h.planWith(passOptions())
	var u *drivers.UnavailableError
	if !errors.As(err, &u) || len(res.Plan.Actions) != 0 || len(res.Plan.Problems) != 1 {
		t.Errorf("plan: err = %v, plan = %+v", err, res.Plan)
	}
	res, err = h.apply()
	if !errors.As(err, &u) || res != nil {
		t.Errorf("apply: err = %v, result = %+v", err, res)
	}
	if _, err := os.Stat(filepath.Join(h.root, spec.Dir)); !os.IsNotExist(err) {
		t.Errorf("the failed apply created %s: %v", spec.Dir, err)
	}
}

// pickySim is a backend that cannot honour more than 8 CPUs: what it
// cannot do is a plan problem naming the key, never a half-done apply.
type pickySim struct{ Driver }

func (pickySim) Validate(_ context.Context, s drivers.Spec) error {
	if s.CPUs > 8 {
		return &drivers.SpecError{Driver: "sim", Key: "cpus", Reason: "give a VM more than 8 CPUs"}
	}
	return nil
}

func TestBackendValidationIsAPlanProblem(t *testing.T) {
	h := newHarness(t, "[vm]\ndriver = \"sim\"\n[sandboxes.big]\ncpus = 16\n[sandboxes.small]\n")
	plain := h.eng.Drivers
	h.eng.Drivers = func(name string, r *spec.Resolved) (Driver, error) {
		d, err := plain(name, r)
		if err != nil {
			return nil, err
		}
		return pickySim{d}, nil
	}
	res, err := h.apply()
	if err == nil || !strings.Contains(err.Error(),
		"sandbox big: cpus: the sim driver cannot give a VM more than 8 CPUs") {
		t.Fatalf("err = %v", err)
	}
	if len(res.Plan.Actions) != 1 || res.Plan.Actions[0].Sandbox != "small" || len(res.Plan.Problems) != 1 {
		t.Errorf("plan = %+v", res.Plan)
	}
	if _, made := h.world()[drivers.InstanceName(res.Resolved.WorkspaceID, "big")]; made {
		t.Error("the sandbox the backend cannot honour was created")
	}
}

// panicky is a backend whose create panics.
type panicky struct{ Driver }

func (panicky) Create(context.Context, drivers.Spec) error { panic("the driver broke") }

// A panicking action fails its sandbox, reported with the panic, and the
// other sandboxes still converge: the process survives it.
func TestAPanickingActionFailsItsSandboxOnly(t *testing.T) {
	h := newHarness(t, "[vm]\ndriver = \"sim\"\n[sandboxes.api]\n")
	real := h.eng.Drivers
	h.eng.Drivers = func(name string, r *spec.Resolved) (Driver, error) {
		d, err := real(name, r)
		return panicky{d}, err
	}
	_, err := h.apply()
	if err == nil || !strings.Contains(err.Error(), "panicked: the driver broke") {
		t.Fatalf("apply: %v", err)
	}
}

// slowCreate is a backend whose create takes real time.
type slowCreate struct{ Driver }

func (s slowCreate) Create(ctx context.Context, spec drivers.Spec) error {
	time.Sleep(40 * time.Millisecond)
	return s.Driver.Create(ctx, spec)
}

// An action's Elapsed is the real time it took, whatever the engine's
// clock says: with SBF_NOW pinned it said "done (0s)" after minutes.
func TestProgressTimesAreRealTime(t *testing.T) {
	h := newHarness(t, "[vm]\ndriver = \"sim\"\n[sandboxes.api]\n")
	real := h.eng.Drivers
	h.eng.Drivers = func(name string, r *spec.Resolved) (Driver, error) {
		d, err := real(name, r)
		return slowCreate{d}, err
	}
	var created *Event
	h.eng.Events = func(ev Event) {
		if ev.Done && ev.Kind == plan.Create {
			created = &ev
		}
	}
	h.mustApply()
	if created == nil || created.Elapsed < 40*time.Millisecond {
		t.Fatalf("the create's done event: %+v (the engine's clock did not move)", created)
	}
}
