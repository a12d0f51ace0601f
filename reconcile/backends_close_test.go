package reconcile

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/spec"
)

type closingDriver struct {
	Driver
	closed *atomic.Int32
}

func (c closingDriver) Close() error { c.closed.Add(1); return nil }

// closeTestCounts is the counter of the run of the test below going on:
// the registration outlives a run (go test -count=N).
var closeTestCounts atomic.Pointer[atomic.Int32]

// The drivers a process built are closed together when it is done.
func TestABackendSetClosesWhatItBuilt(t *testing.T) {
	var closed atomic.Int32
	closeTestCounts.Store(&closed)
	if _, ok := drivers.Lookup("closetest"); !ok {
		drivers.Register(drivers.Registration{Name: "closetest",
			New: func(context.Context, drivers.Env) (drivers.Driver, error) {
				return closingDriver{closed: closeTestCounts.Load()}, nil
			}})
	}
	set := OpenBackends(context.Background(), drivers.Env{})
	for range 3 {
		if _, err := set.Get("closetest", &spec.Resolved{Root: "/ws"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := set.Close(); err != nil || closed.Load() != 1 {
		t.Errorf("Close: %v, %d drivers closed, want the one built", err, closed.Load())
	}
}
