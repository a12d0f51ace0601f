package reconcile

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/internal/flock"
	"github.com/sandboxforge/sbf/internal/ownfile"
	"github.com/sandboxforge/sbf/reconcile/admission"
	"github.com/sandboxforge/sbf/sandbox"
	"github.com/sandboxforge/sbf/spec"
	"github.com/sandboxforge/sbf/state"
)

// gatedCreate holds each create until the test lets it finish.
type gatedCreate struct {
	Driver
	started chan string
	finish  chan struct{}
}

func (g gatedCreate) Create(ctx context.Context, s drivers.Spec) error {
	g.started <- s.Name
	<-g.finish
	return g.Driver.Create(ctx, s)
}

// The first Ctrl-C stops a run from starting steps; the create in flight
// finishes and is recorded as running, the others are not attempted, and
// the run says it was interrupted.
func TestAStoppedRunFinishesTheStepInFlightOnly(t *testing.T) {
	h := newHarness(t, "[vm]\ndriver = \"sim\"\n[sandboxes.a]\n[sandboxes.b]\n[sandboxes.c]\n")
	h.eng.Parallelism = 1
	g := gatedCreate{started: make(chan string, 3), finish: make(chan struct{})}
	h.eng.Drivers = func(name string, r *spec.Resolved) (Driver, error) {
		d, err := h.driver(name, r)
		g.Driver = d
		return g, err
	}
	stop := make(chan struct{})
	done := make(chan error, 1)
	var res *Result
	go func() {
		var err error
		res, err = h.eng.Apply(WithStop(context.Background(), stop), h.ws(), Options{Intent: Renew{All: true}})
		done <- err
	}()
	first := <-g.started
	close(stop) // Ctrl-C while the first create runs
	close(g.finish)
	err := <-done
	if !errors.Is(err, ErrInterrupted) {
		t.Fatalf("the stopped run returned %v", err)
	}
	running := 0
	for name, rec := range res.recorded.Sandboxes {
		if rec.Phase == state.Running {
			running++
			if rec.Instance != first {
				t.Errorf("%s is running, but the create in flight was %s", name, first)
			}
		}
	}
	if running != 1 || len(res.Outcome.NotAttempted) != 2 {
		t.Errorf("after the stop: %d running, %d not attempted; want the one in flight done and two left",
			running, len(res.Outcome.NotAttempted))
	}
	if len(g.started) != 0 {
		t.Errorf("a create started after the stop")
	}
}

// A run must say what it asks: no Intent means nothing (never a loop pass).
func TestARunWithoutAnIntentIsRefused(t *testing.T) {
	h := newHarness(t, "[vm]\ndriver = \"sim\"\n[sandboxes.api]\n")
	if _, err := h.converge(Options{}); err == nil || !strings.Contains(err.Error(), "asked nothing") {
		t.Errorf("an Options{} run: %v", err)
	}
	if got := h.world(); len(got) != 0 {
		t.Errorf("it changed the world: %v", got)
	}
}

// docker_compose up of the engine's own stack (ComposeUp) waits for
// a run that holds the sandbox (a loop pass), then converges it: never a
// success with nothing done because a pass was busy with it.
func TestComposeUpWaitsForTheRunHoldingIt(t *testing.T) {
	h := newHarness(t, "[vm]\ndriver = \"sim\"\n[sandboxes.api]\n")
	h.eng.LockTimeout = 20 * time.Second
	h.mustApply()
	h.writeSpec("[vm]\ndriver = \"sim\"\ncpus = 4\n[sandboxes.api]\n") // something to converge
	lock, err := flock.Acquire(context.Background(), ownfile.In(h.root, spec.Dir).Sub(admission.LocksDir).File("api.lock"),
		flock.Holder{Command: "sbf serve (a loop pass)"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	var conv sandbox.Converged
	go func() {
		var err error
		conv, err = h.eng.ComposeUp(context.Background(), h.ws(), "api")
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("ComposeUp returned while a pass held the sandbox: %v", err)
	case <-time.After(200 * time.Millisecond):
	}
	lock.Release()
	if err := <-done; err != nil || conv.Plan == nil || len(conv.Plan.Actions) == 0 {
		t.Fatalf("after the pass let go: %v, plan %+v", err, conv.Plan)
	}
}
