package reconcile

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/internal/coded"
	"github.com/sandboxforge/sbf/reconcile/plan"
	"github.com/sandboxforge/sbf/spec"
	"github.com/sandboxforge/sbf/state"
)

const capOfOne = "[vm]\ndriver = \"sim\"\n[lease]\nmax_instances = 1\n"

// ledgerOf is the host's instance ledger as the harness's engine opens it.
func ledgerOf(h *harness) *state.Ledger {
	return state.OpenLedger(filepath.Join(h.hostDir, "admission"))
}

func upOf(name string) Options {
	return Options{Targets: []string{name}, Intent: Up{Sandboxes: []string{name}}}
}

// A create past the cap is refused before it waits for anything another
// create in flight holds, even when that create has not been admitted
// yet: each reserves its place before it waits for a lock or plans. Here
// create A is held while it observes the backends, before its step; B,
// past the cap of one, must be refused while A is still held, and A then
// creates its sandbox.
func TestACreatePastTheCapIsRefusedWhileAnotherIsInFlight(t *testing.T) {
	h := newHarness(t, capOfOne)
	// A ledger counted a moment ago: no create lists the backends to admit.
	if err := ledgerOf(h).Reset(map[string]bool{}, h.clock.Now()); err != nil {
		t.Fatal(err)
	}
	held, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	a := engineFor(h, func(name string, r *spec.Resolved) (Driver, error) {
		d, err := h.driver(name, r)
		return hookedList{Driver: d, once: &once, hook: func() {
			close(held)
			<-release
		}}, err
	})
	aDone := make(chan error, 1)
	go func() {
		_, err := a.Apply(context.Background(), h.ws(), upOf("inst_a"))
		aDone <- err
	}()
	select {
	case <-held:
	case err := <-aDone:
		t.Fatalf("create A ended before it observed the backends: %v", err)
	}
	bDone := make(chan error, 1)
	go func() {
		_, err := h.converge(upOf("inst_b"))
		bDone <- err
	}()
	var bErr error
	select {
	case bErr = <-bDone:
	case <-time.After(30 * time.Second): // liveness, not speed: B would wait for A forever
		close(release)
		t.Fatalf("create B waited for create A: %v", <-bDone)
	}
	close(release)
	var ce *coded.Error
	if !errors.As(bErr, &ce) || ce.Code != coded.InstanceLimit {
		t.Errorf("create B past the cap, while A was in flight: %v", bErr)
	}
	if err := <-aDone; err != nil {
		t.Errorf("create A, in flight first: %v", err)
	}
	if _, ok := h.world()[h.instance("inst_a")]; !ok {
		t.Error("create A made no VM")
	}
}

// A reservation the run does not go on to use is taken back when the run
// ends: a create declined at the prompt leaves no place taken.
func TestADeclinedCreateLeavesNoReservation(t *testing.T) {
	h := newHarness(t, capOfOne)
	opts := upOf("inst_a")
	opts.Confirm = func(*plan.Plan) (bool, error) { return false, nil }
	if _, err := h.converge(opts); err != nil {
		t.Fatalf("a declined create: %v", err)
	}
	inst := drivers.InstanceName(h.workspaceID(), "inst_a")
	if has, err := ledgerOf(h).Has(inst); err != nil || has {
		t.Errorf("the ledger holds %s after its create was declined (%v)", inst, err)
	}
	if _, err := h.converge(upOf("inst_b")); err != nil {
		t.Errorf("a create after a declined one, at a cap of one: %v", err)
	}
}

// A reservation a killed process left in the ledger does not count for
// ever: once the last full count is old, the next create counts the
// instances again and the reservation, which no backend lists and no
// process holds, is dropped.
func TestAReservationOfAKilledProcessIsDropped(t *testing.T) {
	h := newHarness(t, capOfOne)
	dead := drivers.InstanceName(h.workspaceID(), "inst_dead")
	if err := ledgerOf(h).Reset(map[string]bool{dead: true}, h.clock.Now()); err != nil {
		t.Fatal(err)
	}
	h.clock.Advance(time.Minute)
	if _, err := h.converge(upOf("inst_a")); err != nil {
		t.Fatalf("a create beside a dead reservation: %v", err)
	}
	if set, _, _ := ledgerOf(h).Instances(); set[dead] {
		t.Errorf("the dead reservation is still in the ledger: %v", set)
	}
}
