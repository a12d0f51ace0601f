package reconcile

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/sandboxforge/sbf/drivers/sim"
	"github.com/sandboxforge/sbf/spec"
)

// leaseSim is the sim as a backend that keeps lease ends on its instances.
type leaseSim struct {
	*sim.Driver
	mu       *sync.Mutex
	recorded map[string]time.Time
}

func (l leaseSim) RecordLease(_ context.Context, instance string, at time.Time) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.recorded[instance] = at
	return nil
}

func TestLeaseEndsAreRecordedOnInstancesThatKeepThem(t *testing.T) {
	h := newHarness(t, twoSandboxes)
	recorded, mu := map[string]time.Time{}, &sync.Mutex{}
	h.eng.Drivers = func(name string, r *spec.Resolved) (Driver, error) {
		d, err := h.driver(name, r)
		if err != nil {
			return nil, err
		}
		return leaseSim{Driver: d.(*sim.Driver), mu: mu, recorded: recorded}, nil
	}
	h.mustApply()
	want := t0.Add(30 * time.Minute)
	if got := recorded[h.instance("api")]; !got.Equal(want) || len(recorded) != 2 {
		t.Fatalf("after apply: %v, want both sandboxes' lease end %v", recorded, want)
	}
	clear(recorded)
	if _, err := h.reconcile(); err != nil || len(recorded) != 0 {
		t.Errorf("a pass that changed nothing recorded %v (%v)", recorded, err)
	}
	h.clock.Advance(10 * time.Minute)
	if _, err := h.converge(Options{Intent: Extend{Sandbox: "api", By: time.Hour}}); err != nil {
		t.Fatal(err)
	}
	if got := recorded[h.instance("api")]; !got.Equal(want.Add(time.Hour)) {
		t.Errorf("after extend: %v, want %v", recorded, want.Add(time.Hour))
	}
}
