package reconcile

import (
	"context"
	"errors"
	"testing"

	"github.com/sandboxforge/sbf/drivers"
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
		res, err = h.eng.Apply(WithStop(context.Background(), stop), h.ws(), Options{Request: Request{Op: Renew}})
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
	for name, rec := range res.State.Sandboxes {
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
