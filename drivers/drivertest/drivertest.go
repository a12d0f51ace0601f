// Package drivertest is the contract between the engine and every
// backend, as a test suite. A backend's tests call Run with a Harness that
// gives each subtest a driver on a world of its own (a sim folder, a fake
// limactl, a fake powershell, or the real thing), and the suite checks
// what reconcile relies on:
//
//   - created instances are stopped; Start runs them, Stop stops them,
//     Reconfigure changes a stopped one, Delete removes it;
//   - List reports each of sbf's instances with its status, and what it
//     reports (cpus, memory, disk, arch, vm_type, where it reports them)
//     equals what was asked, or the planner would change them forever;
//   - List reports nothing sbf did not create, and nothing sbf did not
//     create is changed by the driver;
//   - the engine's retries are safe: Start of a running instance and Stop
//     of a stopped one do nothing; Stop and Delete of a missing instance
//     succeed or wrap drivers.ErrNotFound; Create of an existing name
//     fails without touching the instance; Start of a missing instance
//     fails and creates nothing;
//   - a backend that labels instances (drivers.Labeler) lists pool spares
//     with their labels, lets exactly one of concurrent claims win, keeps
//     a label until the instance is deleted and never after, and lists an
//     instance it labelled whatever its name;
//   - a backend that keeps snapshots (drivers.Snapshotter) or clones
//     (drivers.Cloner) keeps them apart per instance and name, and a
//     clone is a stopped instance of its own, as its spec says.
package drivertest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/sandboxforge/sbf/drivers"
)

// Harness is what the suite needs from a backend.
type Harness struct {
	// New returns a driver on a fresh, empty world. Each subtest calls it
	// once.
	New func(t *testing.T) World
	// Spec returns a spec the backend can create under the given instance
	// name (a name from drivers.InstanceName).
	Spec func(name string) drivers.Spec
	// Grow returns s with a change a stopped instance takes without being
	// replaced. Nil: one more CPU, 1 GiB more memory, a 5 GiB larger disk.
	Grow func(s drivers.Spec) drivers.Spec
}

// World is a driver and what the suite may do behind its back.
type World struct {
	Driver drivers.Driver
	// AddForeign makes an instance named name the way a person would,
	// outside sbf. Nil when nothing but sbf can put instances in this
	// world (the sim's).
	AddForeign func(t *testing.T, name string)
	// ForeignExists reports whether that instance is still there, as it
	// was made. Required with AddForeign.
	ForeignExists func(t *testing.T, name string) bool
	// MarksOwnership says the backend records that sbf made an instance
	// beyond its name (Hyper-V's Notes), so an instance merely named like
	// one of sbf's must be neither listed nor touched either.
	MarksOwnership bool
	// Imports says AddForeign makes a real instance of the backend that
	// a Labeler's Claim can label (how a SandboxForge v1 VM is imported).
	Imports bool
}

// Names the suite creates. They are what drivers.InstanceName derives
// for the workspace ws_c0ffee00aabb.
var (
	Primary   = drivers.InstanceName("ws_c0ffee00aabb", "contract")
	Secondary = drivers.InstanceName("ws_c0ffee00aabb", "second")
	Lookalike = drivers.InstanceName("ws_0000beefcafe", "lookalike")
)

// Run runs the whole contract.
func Run(t *testing.T, h Harness) {
	if h.Grow == nil {
		h.Grow = func(s drivers.Spec) drivers.Spec {
			s.CPUs, s.MemoryGiB, s.DiskGiB = s.CPUs+1, s.MemoryGiB+1, s.DiskGiB+5
			return s
		}
	}
	t.Run("lifecycle", func(t *testing.T) { lifecycle(t, h) })
	t.Run("retries are safe", func(t *testing.T) { retries(t, h) })
	t.Run("create refuses an existing name", func(t *testing.T) { createTwice(t, h) })
	t.Run("start of a missing instance creates nothing", func(t *testing.T) { startMissing(t, h) })
	t.Run("instances are independent", func(t *testing.T) { independent(t, h) })
	t.Run("foreign instances are neither listed nor touched", func(t *testing.T) { foreign(t, h) })
	t.Run("labels", func(t *testing.T) { labels(t, h) })
	t.Run("snapshots", func(t *testing.T) { snapshots(t, h) })
	t.Run("clones", func(t *testing.T) { clones(t, h) })
}

// Spare names the suite creates for the label rules.
var (
	SpareA = drivers.PoolInstanceName("0123abcd", 1)
	SpareB = drivers.PoolInstanceName("0123abcd", 2)
)

func labels(t *testing.T, h Harness) {
	ctx := context.Background()
	w := h.New(t)
	lab := drivers.CapabilitiesOf(w.Driver).Labels
	if lab == nil {
		t.Skip("this backend keeps no labels, so it keeps no pool spares")
	}
	at := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	spare := drivers.SpareLabel{Pool: "small", Workspace: "ws_c0ffee00aabb", Shape: "0123abcd", CreatedAt: at,
		IdleUntil: at.Add(time.Hour), Docker: "docker"}
	for _, name := range []string{SpareA, SpareB} {
		s := h.Spec(name)
		must(t, "Create "+name, w.Driver.Create(ctx, s))
		must(t, "Start "+name, w.Driver.Start(ctx, s))
	}
	if l := listed(t, w.Driver)[SpareA].Label; l != nil {
		t.Errorf("a new instance carries a label: %+v", l)
	}
	must(t, "MarkSpare", lab.MarkSpare(ctx, SpareA, spare))
	if l := listed(t, w.Driver)[SpareA].Label; l == nil || l.Spare == nil || *l.Spare != spare || l.Owner != nil {
		t.Errorf("List reports the spare's label as %+v; want %+v", l, spare)
	}
	if err := lab.Claim(ctx, Secondary, drivers.Owner{WorkspaceID: "ws_c0ffee00aabb", Sandbox: "x"}); !errors.Is(
		err,
		drivers.ErrNotFound,
	) {
		t.Errorf("Claim of an instance never made: %v (want an error wrapping drivers.ErrNotFound)", err)
	}

	// Concurrent claims of one spare: exactly one wins.
	var wg sync.WaitGroup
	wins := make(chan drivers.Owner, 8)
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			o := drivers.Owner{WorkspaceID: "ws_c0ffee00aabb", Sandbox: fmt.Sprintf("claimer%d", i), Since: at}
			switch err := lab.Claim(ctx, SpareB, o); {
			case err == nil:
				wins <- o
			case !errors.Is(err, drivers.ErrOwned):
				t.Errorf("a claim that lost: %v (want an error wrapping drivers.ErrOwned)", err)
			}
		}()
	}
	wg.Wait()
	close(wins)
	var winners []drivers.Owner
	for o := range wins {
		winners = append(winners, o)
	}
	if len(winners) != 1 {
		t.Fatalf("%d of 8 concurrent claims of %s won; want exactly 1", len(winners), SpareB)
	}
	if l := listed(t, w.Driver)[SpareB].Label; l == nil || l.Owner == nil || !l.Owner.Same(winners[0]) {
		t.Errorf("List reports %s's owner as %+v; want %+v", SpareB, l, winners[0])
	}
	must(t, "a claim by the owner already recorded", lab.Claim(ctx, SpareB, winners[0]))
	// However the goroutines above were scheduled, a later claim by another
	// owner must lose too.
	late := drivers.Owner{WorkspaceID: "ws_c0ffee00aabb", Sandbox: "latecomer", Since: at}
	if err := lab.Claim(ctx, SpareB, late); !errors.Is(err, drivers.ErrOwned) {
		t.Fatalf("a later claim of %s won although it was owned: %v (want an error wrapping drivers.ErrOwned)",
			SpareB, err)
	}

	must(t, "Delete", w.Driver.Delete(ctx, SpareB))
	s := h.Spec(SpareB)
	must(t, "Create again", w.Driver.Create(ctx, s))
	if l := listed(t, w.Driver)[SpareB].Label; l != nil {
		t.Errorf("a label outlived its instance: %+v", l)
	}
	must(t, "Delete", w.Driver.Delete(ctx, SpareB))

	if !w.Imports {
		return
	}
	// An instance made outside sbf that sbf was asked to adopt (an
	// import) is listed once labelled.
	w.AddForeign(t, "imported")
	if _, ok := listed(t, w.Driver)["imported"]; ok {
		t.Fatal("List reports imported before it was claimed")
	}
	o := drivers.Owner{WorkspaceID: "ws_c0ffee00aabb", Sandbox: "imported"}
	must(t, "Claim of an instance made outside sbf", lab.Claim(ctx, "imported", o))
	if l := listed(t, w.Driver)["imported"].Label; !l.OwnedBy(o.WorkspaceID, o.Sandbox) {
		t.Errorf("List does not report the claimed instance imported with its owner: %+v", l)
	}
}

func lifecycle(t *testing.T, h Harness) {
	ctx := context.Background()
	d := h.New(t).Driver
	s := h.Spec(Primary)
	absent(t, d, Primary)
	must(t, "Create", d.Create(ctx, s))
	expect(t, d, s, drivers.Stopped)
	must(t, "Start", d.Start(ctx, s))
	expect(t, d, s, drivers.Running)
	must(t, "Stop", d.Stop(ctx, Primary))
	expect(t, d, s, drivers.Stopped)
	grown := h.Grow(s)
	must(t, "Reconfigure of the stopped instance", d.Reconfigure(ctx, grown))
	expect(t, d, grown, drivers.Stopped)
	must(t, "Start after Reconfigure", d.Start(ctx, grown))
	expect(t, d, grown, drivers.Running)
	must(t, "Delete of the running instance", d.Delete(ctx, Primary))
	absent(t, d, Primary)
}

func retries(t *testing.T, h Harness) {
	ctx := context.Background()
	d := h.New(t).Driver
	s := h.Spec(Primary)
	must(t, "Create", d.Create(ctx, s))
	must(t, "Stop of a stopped instance", d.Stop(ctx, Primary))
	expect(t, d, s, drivers.Stopped)
	must(t, "Start", d.Start(ctx, s))
	must(t, "Start of a running instance", d.Start(ctx, s))
	expect(t, d, s, drivers.Running)
	must(t, "Delete", d.Delete(ctx, Primary))
	gone(t, "Delete of a deleted instance", d.Delete(ctx, Primary))
	gone(t, "Stop of a deleted instance", d.Stop(ctx, Primary))
	gone(t, "Delete of an instance never made", d.Delete(ctx, Secondary))
	absent(t, d, Primary)
}

func createTwice(t *testing.T, h Harness) {
	ctx := context.Background()
	d := h.New(t).Driver
	s := h.Spec(Primary)
	must(t, "Create", d.Create(ctx, s))
	must(t, "Start", d.Start(ctx, s))
	if err := d.Create(ctx, s); err == nil {
		t.Error("a second Create of the same name succeeded; the engine relies on it failing")
	}
	expect(t, d, s, drivers.Running)
}

func startMissing(t *testing.T, h Harness) {
	ctx := context.Background()
	d := h.New(t).Driver
	if err := d.Start(ctx, h.Spec(Primary)); err == nil {
		t.Error("Start of an instance that does not exist succeeded")
	}
	absent(t, d, Primary)
}

func independent(t *testing.T, h Harness) {
	ctx := context.Background()
	d := h.New(t).Driver
	a, b := h.Spec(Primary), h.Spec(Secondary)
	must(t, "Create "+Primary, d.Create(ctx, a))
	must(t, "Create "+Secondary, d.Create(ctx, b))
	must(t, "Start "+Secondary, d.Start(ctx, b))
	expect(t, d, a, drivers.Stopped)
	expect(t, d, b, drivers.Running)
	must(t, "Delete "+Primary, d.Delete(ctx, Primary))
	absent(t, d, Primary)
	expect(t, d, b, drivers.Running)
}

func foreign(t *testing.T, h Harness) {
	ctx := context.Background()
	w := h.New(t)
	if w.AddForeign == nil {
		t.Skip("only sbf can put instances into this backend's world")
	}
	names := []string{"default"}
	if w.MarksOwnership {
		names = append(names, Lookalike)
	}
	for _, n := range names {
		w.AddForeign(t, n)
	}
	s := h.Spec(Primary)
	must(t, "Create", w.Driver.Create(ctx, s))
	list := listed(t, w.Driver)
	for _, n := range names {
		if _, ok := list[n]; ok {
			t.Errorf("List reports %s, which sbf did not create", n)
		}
	}
	if _, ok := list[Primary]; !ok {
		t.Errorf("List lost %s among foreign instances", Primary)
	}
	if w.MarksOwnership {
		ls := h.Spec(Lookalike)
		for op, err := range map[string]error{
			"Stop": w.Driver.Stop(ctx, Lookalike), "Start": w.Driver.Start(ctx, ls),
			"Reconfigure": w.Driver.Reconfigure(ctx, h.Grow(ls)), "Delete": w.Driver.Delete(ctx, Lookalike),
		} {
			if err == nil || errors.Is(err, drivers.ErrNotFound) {
				t.Errorf("%s of %s, named like sbf's but not made by it: %v (want a refusal)", op, Lookalike, err)
			}
		}
	}
	for _, n := range names {
		if !w.ForeignExists(t, n) {
			t.Errorf("%s, which sbf did not create, is gone or changed", n)
		}
	}
}
