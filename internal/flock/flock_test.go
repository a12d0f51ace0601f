package flock

import (
	"context"
	"errors"
	"path/filepath"
	"sync/atomic"
	"testing"
)

// A look at who holds a lock takes it for an instant; a run that tries
// once at that instant must still get it.
func TestALookNeverFailsARunThatTriesOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.lock")
	first, err := Acquire(context.Background(), path, Holder{Command: "first"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	first.Release()
	var stop atomic.Bool
	looked := make(chan int)
	go func() {
		n := 0
		for ; !stop.Load(); n++ {
			Holding(path)
		}
		looked <- n
	}()
	for i := range 300 {
		l, err := Acquire(context.Background(), path, Holder{Command: "run"}, 0)
		if err != nil {
			stop.Store(true)
			<-looked
			t.Fatalf("try %d: %v", i, err)
		}
		l.Release()
	}
	stop.Store(true)
	if n := <-looked; n == 0 {
		t.Fatal("nobody looked")
	}
}

// A holder that wrote its note is reported at once, with its name.
func TestAHeldLockNamesItsHolder(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.lock")
	held, err := Acquire(context.Background(), path, Holder{Command: "sbf apply", PID: 7}, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release()
	if h := Holding(path); h == nil || h.Command != "sbf apply" {
		t.Errorf("Holding = %+v", h)
	}
	_, err = Acquire(context.Background(), path, Holder{Command: "second"}, 0)
	var le *LockedError
	if !errors.As(err, &le) || le.Holder == nil || le.Holder.Command != "sbf apply" || le.Holder.PID != 7 {
		t.Errorf("second Acquire: %v", err)
	}
}
