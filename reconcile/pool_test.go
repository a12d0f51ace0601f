package reconcile

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sandboxforge/sbf/reconcile/loop"
	"github.com/sandboxforge/sbf/reconcile/plan"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/drivers/sim"
	"github.com/sandboxforge/sbf/internal/clock"
	"github.com/sandboxforge/sbf/internal/coded"
	"github.com/sandboxforge/sbf/spec"
	"github.com/sandboxforge/sbf/state"
)

const poolSpec = `[vm]
driver = "sim"
cpus = 2
[pool.small]
size = 1
[lease]
max_instances = 20
`

// fill is one pool pass (`sbf pool fill`).
func (h *harness) fill() *Result {
	h.t.Helper()
	res, err := h.eng.Apply(context.Background(), h.ws(), Options{Intent: FillPools{}})
	if err != nil {
		h.t.Fatalf("pool pass: %v", err)
	}
	return res
}

// up is `sbf up NAME` (create_instance makes the same edit).
func (h *harness) up(names ...string) (*Result, error) {
	return h.converge(Options{Targets: names, Intent: Up{Sandboxes: names}})
}

// spares lists the world's pool instances nobody owns, and the owned ones
// by owner sandbox.
func (h *harness) spares() (spares []string, owned map[string]string) {
	h.t.Helper()
	owned = map[string]string{}
	for name, inst := range h.world() {
		if _, _, ok := drivers.ParsePoolName(name); !ok {
			continue
		}
		if l := inst.Label; l != nil && l.Owner != nil && !l.Owner.Retired {
			if prev, dup := owned[l.Owner.Sandbox+"@"+l.Owner.WorkspaceID]; dup {
				h.t.Errorf("%s and %s both belong to %s", prev, name, l.Owner.Sandbox)
			}
			owned[l.Owner.Sandbox+"@"+l.Owner.WorkspaceID] = name
			continue
		}
		spares = append(spares, name)
	}
	slices.Sort(spares)
	return spares, owned
}

func (h *harness) workspaceID() string {
	_, id, err := spec.WorkspaceIdentity(h.root)
	if err != nil {
		h.t.Fatal(err)
	}
	return id
}

func steps(p *plan.Plan) string {
	var out []string
	for _, a := range p.Actions {
		out = append(out, a.Subject()+":"+string(a.Kind))
	}
	return strings.Join(out, " ")
}

// A create finds a ready spare of its shape and adopts it: no VM is
// created for it, the state file and the label say whose it is, commands
// reach it, and the next pool pass makes a new spare. Destroying the
// sandbox deletes the adopted VM; the spare it left stays a spare.
func TestCreateAdoptsAWarmSpare(t *testing.T) {
	h := newHarness(t, poolSpec+"[sandboxes.api]\n")
	res := h.fill()
	if steps(res.Plan) != "pool.small:create" {
		t.Fatalf("first pool pass: %s", steps(res.Plan))
	}
	spares, _ := h.spares()
	if len(spares) != 1 {
		t.Fatalf("spares after the fill: %v", spares)
	}
	spare := spares[0]
	if again := h.fill(); len(again.Plan.Actions) != 0 {
		t.Fatalf("a full pool plans %s", steps(again.Plan))
	}

	mark := h.logLen()
	up, err := h.up("api")
	if err != nil {
		t.Fatal(err)
	}
	res2 := up
	if steps(res2.Plan) != "api:adopt" || res2.Plan.Actions[0].Instance != spare {
		t.Fatalf("up plans %s (%+v)", steps(res2.Plan), res2.Plan.Actions)
	}
	var out strings.Builder
	res2.Plan.Render(&out, plan.Style{})
	if !strings.Contains(out.String(), "+ api  create (warm: "+spare+")") {
		t.Errorf("rendered plan:\n%s", out.String())
	}
	if _, ops := h.mutations(mark); strings.Contains(fmt.Sprint(ops[mark:]), "create") {
		t.Errorf("adoption created a VM: %v", ops[mark:])
	}
	rec := res2.recorded.Sandboxes["api"]
	if rec.Instance != spare || rec.Phase != state.Running || rec.VM == nil || rec.VM.Name != spare {
		t.Errorf("record = %+v", rec)
	}
	spares, owned := h.spares()
	if len(spares) != 0 || owned["api@"+h.workspaceID()] != spare {
		t.Errorf("after adoption: spares %v, owned %v", spares, owned)
	}
	if got := res2.InstanceOf("api"); got != spare {
		t.Errorf("InstanceOf(api) = %s", got)
	}
	if st := res2.Status(); len(st) != 1 || st[0].Instance != spare || st[0].Live != "running" || st[0].Drift != "" {
		t.Errorf("status = %+v", st)
	}
	if r, err := h.target(t, "api").Exec(context.Background(), execReq("echo hi")); err != nil || r.Stdout != "hi\n" {
		t.Errorf("exec in the adopted VM: %+v %v", r, err)
	}
	if e, ok := state.OpenHostIndex(h.hostDir).Lookup("api"); !ok || e.Instance != spare {
		t.Errorf("host index: %+v", e)
	}
	if p := h.plan(); len(p.Actions) != 0 || len(p.Refresh) != 0 {
		t.Errorf("plan after adoption: %s %+v", steps(p), p.Refresh)
	}

	// The pool is refilled by a pool pass, not by the create.
	if res := h.fill(); steps(res.Plan) != "pool.small:create" || res.Plan.Actions[0].Instance == spare {
		t.Fatalf("refill: %+v", res.Plan.Actions)
	}
	if _, err := h.converge(Options{Targets: []string{"api"}, Intent: Destroy{Sandboxes: []string{"api"}}}); err != nil {
		t.Fatal(err)
	}
	if _, ok := h.world()[spare]; ok {
		t.Error("the adopted VM outlived its sandbox")
	}
	if spares, owned := h.spares(); len(spares) != 1 || len(owned) != 0 {
		t.Errorf("after destroy: spares %v, owned %v", spares, owned)
	}
}

// An adopted VM expires like any other, and is never a spare again.
func TestAdoptedVMExpires(t *testing.T) {
	h := newHarness(t, poolSpec+"[sandboxes.api]\nttl = \"10m\"\n")
	h.fill()
	h.mustApply()
	_, owned := h.spares()
	adopted := owned["api@"+h.workspaceID()]
	if adopted == "" {
		t.Fatal("apply did not adopt the spare")
	}
	h.clock.Advance(11 * time.Minute)
	res, err := h.reconcile()
	if err != nil || steps(res.Plan) != "api:expire" {
		t.Fatalf("reconcile: %s %v", steps(res.Plan), err)
	}
	if _, ok := h.world()[adopted]; ok || res.recorded.Sandboxes["api"].Phase != state.Expired {
		t.Errorf("after expiry: world %v, record %+v", h.world(), res.recorded.Sandboxes["api"])
	}
}

// With the state file gone, an adopted VM is found by its label.
func TestLostStateFindsAdoptedVMByLabel(t *testing.T) {
	h := newHarness(t, poolSpec+"[sandboxes.api]\n")
	h.fill()
	h.mustApply()
	_, owned := h.spares()
	os.Remove(filepath.Join(h.root, spec.Dir, state.FileName))
	mark := h.logLen()
	res := h.mustApply()
	if len(res.Plan.Actions) != 0 || len(res.Plan.Refresh) != 1 ||
		res.recorded.Sandboxes["api"].Instance != owned["api@"+h.workspaceID()] {
		t.Errorf("rebuild: %s %+v → %+v", steps(res.Plan), res.Plan.Refresh, res.recorded.Sandboxes["api"])
	}
	if n, ops := h.mutations(mark); n != 0 {
		t.Errorf("rebuilding changed the world: %v", ops[mark:])
	}
}

// A spare taken by another sbf between plan and apply: the adopt tries
// the next and, with none left, creates the VM as the plan's create would.
func TestAdoptFallsBackWhenTheSpareIsTaken(t *testing.T) {
	h := newHarness(t, poolSpec+"[sandboxes.api]\n")
	h.fill()
	spares, _ := h.spares()
	res, err := h.converge(Options{Targets: []string{"api"}, Intent: Up{Sandboxes: []string{"api"}},
		Confirm: func(p *plan.Plan) (bool, error) {
			d, _ := sim.New(sim.Options{Dir: h.simDir})
			return true, d.Claim(context.Background(), spares[0], drivers.Owner{WorkspaceID: "ws_other", Sandbox: "x"})
		}})
	if err != nil {
		t.Fatal(err)
	}
	if steps(res.Plan) != "api:adopt" || res.recorded.Sandboxes["api"].Instance != h.instance("api") {
		t.Errorf("%s → %+v", steps(res.Plan), res.recorded.Sandboxes["api"])
	}
	if _, ok := h.world()[h.instance("api")]; !ok {
		t.Error("the fallback created nothing")
	}
}

// A spare adopts only when driver and shape match; mounts and ports it
// lacks are applied after adoption with a restart.
func TestAdoptionMatchesShapeAndReconfigures(t *testing.T) {
	h := newHarness(t, poolSpec+"[sandboxes.big]\ncpus = 4\n[sandboxes.api]\nports = [\"8080:80\"]\n")
	h.fill()
	spares, _ := h.spares()
	res := h.mustApply()
	if steps(res.Plan) != "api:adopt big:create" || !res.Plan.Actions[0].Reconfigure {
		t.Fatalf("plan: %s %+v", steps(res.Plan), res.Plan.Actions)
	}
	inst := h.world()[spares[0]]
	if !slices.Equal(inst.Reported.Ports, []string{"8080:80"}) || inst.Status != drivers.Running {
		t.Errorf("adopted spare after reconfigure: %+v", inst)
	}
	if p := h.plan(); len(p.Actions) != 0 {
		t.Errorf("plan after adoption: %s", steps(p))
	}
}

// Spares count toward [lease] max_instances; a sandbox's create that
// would pass the cap deletes a spare first, and a fill stops at the cap.
func TestInstanceCapEvictsSparesForSandboxes(t *testing.T) {
	h := newHarness(t,
		"[vm]\ndriver = \"sim\"\ncpus = 2\n[pool.small]\ncpus = 4\nsize = 3\n[lease]\nmax_instances = 2\n[sandboxes.api]\n")
	_, err := h.eng.Apply(context.Background(), h.ws(), Options{Intent: FillPools{}})
	if coded.Of(err, coded.Unknown).Code != coded.InstanceLimit {
		t.Errorf("a fill past the cap: %v", err)
	}
	if spares, _ := h.spares(); len(spares) != 2 {
		t.Fatalf("spares = %v, want the 2 the cap allows", spares)
	}
	res, err := h.up("api")
	if err != nil {
		t.Fatalf("a sandbox's create at the cap: %v", err)
	}
	if steps(res.Plan) != "api:create" {
		t.Errorf("plan: %s", steps(res.Plan))
	}
	if spares, _ := h.spares(); len(spares) != 1 || len(h.world()) != 2 {
		t.Errorf("after the create: spares %v, world %d", spares, len(h.world()))
	}
}

// Removing a [pool] table deletes its spares at the next apply; a
// smaller size deletes the oldest; drain deletes them all.
func TestRemovedPoolAndDrain(t *testing.T) {
	h := newHarness(t, strings.Replace(poolSpec, "size = 1", "size = 3", 1))
	h.fill()
	if spares, _ := h.spares(); len(spares) != 3 {
		t.Fatalf("spares = %v", spares)
	}
	h.writeSpec(poolSpec)
	res := h.mustApply()
	if steps(res.Plan) != "pool.small:delete pool.small:delete" {
		t.Errorf("apply with a smaller pool: %s", steps(res.Plan))
	}
	h.writeSpec("[vm]\ndriver = \"sim\"\n[pool.other]\ncpus = 8\nsize = 0\n")
	// A pool pass converges all of the workspace's pools: one it no
	// longer declares loses its spares.
	if res := h.fill(); steps(res.Plan) != "pool.small:delete" {
		t.Errorf("a pool pass without pool.small: %s", steps(res.Plan))
	}
	if spares, _ := h.spares(); len(spares) != 0 {
		t.Errorf("left after the pool went: %v", spares)
	}

	h.writeSpec(strings.Replace(poolSpec, "size = 1", "size = 2", 1))
	h.fill()
	res2, err := h.eng.Apply(context.Background(), h.ws(), Options{Intent: DrainPools{}})
	if err != nil || len(res2.Plan.Actions) != 2 {
		t.Fatalf("drain: %v %s", err, steps(res2.Plan))
	}
	if len(h.world()) != 0 {
		t.Errorf("after drain: %v", h.world())
	}
}

// A spare idle past max_idle is deleted by any workspace's pass and
// replaced by its pool's.
func TestIdleSpareIsReplaced(t *testing.T) {
	h := newHarness(t, strings.Replace(poolSpec, "size = 1", "size = 1\nmax_idle = \"1h\"", 1))
	h.fill()
	old, _ := h.spares()
	h.clock.Advance(61 * time.Minute)
	other := newHarness(t, "[vm]\ndriver = \"sim\"\n[sandboxes.web]\n")
	other.shareWorld(h)
	// The idle spare is not adopted; the other workspace's pass deletes it.
	if res := other.mustApply(); steps(res.Plan) != "web:create pool.small:delete" {
		t.Errorf("another workspace's apply: %s", steps(res.Plan))
	}
	if res := h.fill(); steps(res.Plan) != "pool.small:create" {
		t.Errorf("refill: %s", steps(res.Plan))
	}
	now, _ := h.spares()
	if len(now) != 1 || !h.world()[now[0]].Label.Spare.CreatedAt.Equal(t0.Add(61*time.Minute)) {
		t.Errorf("spares %v → %v: not a new one", old, now)
	}
}

// shareWorld makes h use other's sim world, host state and clock: two
// workspaces on one host.
func (h *harness) shareWorld(other *harness) {
	h.simDir, h.hostDir, h.clock = other.simDir, other.hostDir, other.clock
	h.eng.HostDir, h.eng.Clock = other.hostDir, other.clock
}

// Ten sandboxes of ten workspaces created at once with three spares: each
// spare is adopted by exactly one, the other seven are created, and every
// VM has exactly one owner.
func TestConcurrentCreatesNeverShareASpare(t *testing.T) {
	host := newHarness(t, strings.Replace(poolSpec, "size = 1", "size = 3", 1))
	host.fill()
	spares, _ := host.spares()
	if len(spares) != 3 {
		t.Fatalf("spares = %v", spares)
	}
	var hs []*harness
	for range 10 {
		h := newHarness(t, "[vm]\ndriver = \"sim\"\ncpus = 2\n[lease]\nmax_instances = 20\n")
		h.shareWorld(host)
		// Real latencies (the fake clock stands still): they interleave the claims.
		h.latency, h.simClock = "claim=5ms,create=20ms,start=10ms", clock.Real{}
		hs = append(hs, h)
	}
	var wg sync.WaitGroup
	errs := make([]error, len(hs))
	results := make([]*Result, len(hs))
	for i, h := range hs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = h.up("agent")
		}()
	}
	wg.Wait()
	adopted, created := map[string]string{}, 0
	for i, h := range hs {
		if errs[i] != nil {
			t.Fatalf("workspace %d: %v", i, errs[i])
		}
		inst := results[i].recorded.Sandboxes["agent"].Instance
		switch {
		case slices.Contains(spares, inst):
			if prev, dup := adopted[inst]; dup {
				t.Errorf("%s adopted by %s and %s", inst, prev, h.root)
			}
			adopted[inst] = h.root
		case inst == h.instance("agent"):
			created++
		default:
			t.Errorf("workspace %d runs %s", i, inst)
		}
	}
	if len(adopted) != 3 || created != 7 {
		t.Errorf("%d adopted, %d created; want 3 and 7", len(adopted), created)
	}
	left, owned := host.spares()
	if len(left) != 0 || len(owned) != 3 {
		t.Errorf("spares left %v, owned %v", left, owned)
	}
	for inst, root := range adopted {
		l := host.world()[inst].Label
		if _, id, _ := spec.WorkspaceIdentity(root); !l.OwnedBy(id, "agent") {
			t.Errorf("%s is labelled %+v, recorded by %s", inst, l.Owner, root)
		}
	}
}

// An existing instance made outside sbf's pools (a v1 VM) becomes an
// ad-hoc sandbox's VM with the given lease, and expires like any other.
func TestAdoptInstanceImportsAnExistingVM(t *testing.T) {
	h := newHarness(t, "[vm]\ndriver = \"sim\"\n")
	d, _ := sim.New(sim.Options{Dir: h.simDir})
	ctx := context.Background()
	v1 := drivers.Spec{Name: "agent-0a1b2c3d", CPUs: 1, MemoryGiB: 2, DiskGiB: 15, Arch: "x86_64", VMType: "qemu",
		Template: "template:docker"}
	if err := d.Create(ctx, v1); err != nil {
		t.Fatal(err)
	}
	if _, err := h.eng.AdoptInstance(ctx, h.ws(), AdoptRequest{Sandbox: "inst_0a1b2c3d", Instance: "agent-0a1b2c3d",
		ExpiresAt: t0.Add(-time.Minute)}); coded.Of(err, coded.Unknown).Code != coded.TTLInvalid {
		t.Errorf("an expired lease: %v", err)
	}
	res, err := h.eng.AdoptInstance(ctx, h.ws(), AdoptRequest{Sandbox: "inst_0a1b2c3d", Instance: "agent-0a1b2c3d",
		ExpiresAt: t0.Add(20 * time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	rec := res.recorded.Sandboxes["inst_0a1b2c3d"]
	if steps(res.Plan) != "inst_0a1b2c3d:adopt" || rec.Instance != "agent-0a1b2c3d" || rec.Phase != state.Running {
		t.Fatalf("%s → %+v", steps(res.Plan), rec)
	}
	if inst := h.world()["agent-0a1b2c3d"]; inst.Status != drivers.Running ||
		!inst.Label.OwnedBy(h.workspaceID(), "inst_0a1b2c3d") {
		t.Errorf("the imported VM: %+v", inst)
	}
	if l := res.Resolved.Config.Leases["inst_0a1b2c3d"]; !l.ExpiresAt.Equal(t0.Add(20 * time.Minute)) {
		t.Errorf("lease = %+v", l)
	}
	// Rerunning changes nothing; another sandbox cannot take it.
	if res, err := h.eng.AdoptInstance(ctx, h.ws(), AdoptRequest{Sandbox: "inst_0a1b2c3d", Instance: "agent-0a1b2c3d",
		ExpiresAt: t0.Add(20 * time.Minute)}); err != nil || len(res.Plan.Actions) != 0 {
		t.Errorf("again: %v %s", err, steps(res.Plan))
	}
	if _, err := h.eng.AdoptInstance(ctx, h.ws(), AdoptRequest{Sandbox: "thief", Instance: "agent-0a1b2c3d",
		ExpiresAt: t0.Add(20 * time.Minute)}); !errors.Is(err, drivers.ErrOwned) {
		t.Errorf("a second owner: %v", err)
	}
	h.clock.Advance(21 * time.Minute)
	if res, err := h.reconcile(); err != nil || !strings.Contains(steps(res.Plan), "inst_0a1b2c3d:expire") {
		t.Errorf("expiry: %s %v", steps(res.Plan), err)
	}
	if _, ok := h.world()["agent-0a1b2c3d"]; ok {
		t.Error("the imported VM outlived its lease")
	}
}

// The loop gives a workspace's pools passes of their own: it fills the
// pool, and when a sandbox adopts the spare (here `sbf up` beside the
// loop) the pool is refilled at once, not an interval later.
func TestLoopFillsAndRefillsPools(t *testing.T) {
	h := newHarness(t, poolSpec)
	pools, stop := h.watchPools(t)
	defer stop()
	wait := func(what string, ok func() bool) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); !ok(); time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("no %s", what)
			}
		}
	}
	var filled *Result
	wait("first pool pass that fills", func() bool {
		select {
		case filled = <-pools:
			return steps(filled.Plan) == "pool.small:create"
		default:
			return false
		}
	})
	spares, _ := h.spares()
	if len(spares) != 1 {
		t.Fatalf("spares after the loop's fill: %v", spares)
	}
	// `sbf up` (create_instance makes the same run) adopts beside the loop.
	if res, err := h.up("api"); err != nil || steps(res.Plan) != "api:adopt" {
		t.Fatalf("up: %v %s", err, steps(res.Plan))
	}
	// The refill is due at once: no clock advance is needed.
	wait("refill", func() bool {
		left, owned := h.spares()
		return len(left) == 1 && left[0] != spares[0] && owned["api@"+h.workspaceID()] == spares[0]
	})
}

// watchPools runs the loop over h's workspace and passes on each pool
// pass's result; stop ends the loop (a pass it cuts short is no error).
func (h *harness) watchPools(tb testing.TB) (pools <-chan *Result, stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	ch := make(chan *Result, 16)
	done := make(chan error, 1)
	go func() {
		done <- h.eng.Watch(ctx, WatchOptions{
			Workspaces:  func() []spec.Options { return []spec.Options{h.ws()} },
			Interval:    time.Hour,
			RefillDelay: -1, // at once: these tests watch the refill
			PoolReport: func(_ spec.Options, res *Result, err error) {
				if err != nil && ctx.Err() == nil {
					tb.Errorf("pool pass: %v", err)
				}
				select {
				case ch <- res:
				case <-ctx.Done():
				}
			},
		})
	}()
	return ch, func() { cancel(); <-done }
}

// After an adoption the loop refills the pool, but only RefillDelay later: the adopter's first
// commands do not share the host with a new spare's boot. With the loop asleep on a full pool,
// `sbf up` adopts the spare; the loop then waits until the adoption plus the delay, with no
// pool pass, and refills once the clock gets there.
func TestARefillWaitsForTheAdoptersFirstCommands(t *testing.T) {
	h := newHarness(t, poolSpec)
	h.fill()
	var passes atomic.Int32
	var last atomic.Pointer[Result]
	l := startLoop(t, h.eng, h.clock, WatchOptions{
		Workspaces: func() []spec.Options { return []spec.Options{h.ws()} }, Interval: time.Hour,
		PoolReport: func(_ spec.Options, res *Result, _ error) { last.Store(res); passes.Add(1) }})
	defer l.stop()
	l.waitFor("the first pool pass", func(_ time.Time, running int) bool { return running == 0 && passes.Load() == 1 })
	if res, err := h.up("agent"); err != nil || steps(res.Plan) != "agent:adopt" {
		t.Fatalf("up: %v %+v", err, res)
	}
	refill := h.clock.Now().Add(loop.DefaultRefillDelay)
	l.waitFor("the refill's time", func(until time.Time, running int) bool { return until.Equal(refill) })
	if n := passes.Load(); n != 1 {
		t.Fatalf("%d pool passes right after the adoption; want the refill to wait", n)
	}
	h.clock.Advance(loop.DefaultRefillDelay)
	l.waitFor("the refill", func(_ time.Time, running int) bool { return running == 0 && passes.Load() == 2 })
	if res := last.Load(); res == nil || len(res.Plan.Actions) != 1 {
		t.Errorf("the refill: %+v", res)
	}
}

// A door names the workspace it adopted a spare in to its loop only afterwards (an MCP
// create_instance touches it once done): the workspace's first pass queues its pool pass for
// the refill's time, not at once.
func TestARefillWaitsAlsoForAWorkspaceNamedAfterTheAdoption(t *testing.T) {
	h := newHarness(t, poolSpec)
	h.fill()
	var named atomic.Bool
	var passes atomic.Int32
	wake := make(chan struct{}, 1)
	l := startLoop(t, h.eng, h.clock, WatchOptions{Interval: time.Hour, Wake: wake,
		Workspaces: func() []spec.Options {
			if named.Load() {
				return []spec.Options{h.ws()}
			}
			return nil
		},
		PoolReport: func(spec.Options, *Result, error) { passes.Add(1) }})
	defer l.stop()
	l.waitFor("nothing to do", func(until time.Time, running int) bool { return running == 0 && until.IsZero() })
	if res, err := h.up("agent"); err != nil || steps(res.Plan) != "agent:adopt" {
		t.Fatalf("up: %v %+v", err, res)
	}
	refill := h.clock.Now().Add(loop.DefaultRefillDelay)
	named.Store(true)
	wake <- struct{}{}
	l.waitFor("the refill's time", func(until time.Time, running int) bool { return running == 0 && until.Equal(refill) })
	if n := passes.Load(); n != 0 {
		t.Fatalf("%d pool passes right after the adoption; want the refill to wait", n)
	}
	h.clock.Advance(loop.DefaultRefillDelay)
	l.waitFor("the refill", func(_ time.Time, running int) bool { return running == 0 && passes.Load() == 1 })
}

// warmingSim is the sim with a Warmer: what a backend that keeps
// connections (Lima's SSH) opens ahead of a spare's first command.
type warmingSim struct {
	*sim.Driver
	mu     sync.Mutex
	warmed []string
}

func (w *warmingSim) Warm(_ context.Context, instance string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.warmed = append(w.warmed, instance)
	return nil
}

func (w *warmingSim) took() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.warmed)
}

// A loop's pool pass connects to the ready spares (the create that adopts
// one then skips the handshake); `sbf pool fill`, a one-shot command, does
// not.
func TestALoopConnectsToItsReadySpares(t *testing.T) {
	h := newHarness(t, poolSpec)
	inner, err := h.driver(sim.Name, nil)
	if err != nil {
		t.Fatal(err)
	}
	w := &warmingSim{Driver: inner.(*sim.Driver)}
	h.eng.Drivers = func(string, *spec.Resolved) (Driver, error) { return w, nil }
	h.fill()
	spares, _ := h.spares()
	if len(spares) != 1 || len(w.took()) != 0 {
		t.Fatalf("after sbf pool fill: spares %v, warmed %v; want one spare, none warmed", spares, w.took())
	}
	if _, err := (engineReconciler{h.eng}).ReconcilePools(context.Background(), h.ws()); err != nil {
		t.Fatal(err)
	}
	if got := w.took(); !slices.Equal(got, spares) {
		t.Errorf("the loop's pool pass warmed %v; want the ready spare %v", got, spares)
	}
}

// besideSim tells whether an adopt's early connection was still being
// made when the run looked again at the instances its actions touched.
type besideSim struct {
	*sim.Driver
	warming, beside, warmed atomic.Bool
	heardEarly              atomic.Bool // the loops heard of the adoption before the connection was made
	indexedBeside           atomic.Bool // the host index learnt the adoption while the connection was made
	hostDir                 string
	looked                  chan struct{}
	adopted                 <-chan struct{} // what a loop hears of adoptions
	once                    sync.Once
}

func (b *besideSim) Inspect(ctx context.Context, names []string) ([]drivers.Instance, error) {
	if b.warming.Load() {
		b.once.Do(func() { close(b.looked) })
	}
	return b.Driver.Inspect(ctx, names)
}

func (b *besideSim) Warm(_ context.Context, instance string) error {
	b.warming.Store(true)
	select {
	case <-b.looked:
		b.beside.Store(true)
		time.Sleep(300 * time.Millisecond) // the handshake outlasts the look: the run must wait for it
	case <-time.After(5 * time.Second):
	}
	for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		entries, _ := state.OpenHostIndex(b.hostDir).All()
		if slices.ContainsFunc(entries, func(e state.IndexEntry) bool { return e.Instance == instance }) {
			b.indexedBeside.Store(true)
			break
		}
	}
	select {
	case <-b.adopted:
		b.heardEarly.Store(true)
	default:
	}
	b.warmed.Store(true)
	return nil
}

// An adopt connects to its spare beside the run's last look at what it
// made (on Lima a limactl run of ~0.1 s), and the run ends with the
// connection made: a warm create's answer waits for the longer of the
// two, not for both; the run's closing writes (the host index, the state)
// go on beside it too. The loops hear of the adoption (and refill, a boot
// beside the connection) only once it is made.
func TestAnAdoptConnectsBesideTheRunsLastLook(t *testing.T) {
	h := newHarness(t, poolSpec+"[sandboxes.api]\n")
	inner, err := h.driver(sim.Name, nil)
	if err != nil {
		t.Fatal(err)
	}
	adopted, stop := h.eng.adoptions.subscribe()
	defer stop()
	b := &besideSim{Driver: inner.(*sim.Driver), looked: make(chan struct{}), adopted: adopted,
		hostDir: h.hostDir}
	h.eng.Drivers = func(string, *spec.Resolved) (Driver, error) { return b, nil }
	h.fill()
	res, err := h.up("api")
	if err != nil || steps(res.Plan) != "api:adopt" {
		t.Fatalf("up: %v, plan %s", err, steps(res.Plan))
	}
	if !b.warmed.Load() {
		t.Error("the run ended before its early connection was made")
	}
	if !b.beside.Load() {
		t.Error("the run looked at what it made only after the connection was made")
	}
	if !b.indexedBeside.Load() {
		t.Error("the run wrote the host index only after the connection was made")
	}
	if b.heardEarly.Load() {
		t.Error("the loops heard of the adoption before its connection was made")
	}
	select {
	case <-adopted:
	default:
		t.Error("the loops never heard of the adoption")
	}
}
