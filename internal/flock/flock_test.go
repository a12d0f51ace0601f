package flock

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sandboxforge/sbf/internal/coded"
	"github.com/sandboxforge/sbf/internal/ownfile"
)

// A look at who holds a lock takes it for an instant; a run that tries
// once at that instant must still get it.
func TestALookNeverFailsARunThatTriesOnce(t *testing.T) {
	path := ownfile.PathFile(filepath.Join(t.TempDir(), "state.lock"))
	first, err := Acquire(context.Background(), path, Holder{Command: "first"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	first.Release()
	var stop atomic.Bool
	looked, looking := make(chan int), make(chan struct{})
	go func() {
		n := 0
		for ; !stop.Load(); n++ {
			Holding(path)
			if n == 0 {
				close(looking)
			}
		}
		looked <- n
	}()
	<-looking
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
	path := ownfile.PathFile(filepath.Join(t.TempDir(), "state.lock"))
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

// A waiter sleeps in the kernel and takes the lock as soon as it is let go.
func TestAWaiterTakesTheLockWhenItIsLetGo(t *testing.T) {
	path := ownfile.PathFile(filepath.Join(t.TempDir(), "state.lock"))
	held, err := Acquire(context.Background(), path, Holder{Command: "first"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	var second *Lock
	go func() {
		var err error
		second, err = Acquire(context.Background(), path, Holder{Command: "second", PID: 2}, time.Minute)
		got <- err
	}()
	select {
	case err := <-got:
		t.Fatalf("the waiter got the lock while it was held: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	held.Release()
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	defer second.Release()
	if h := Holding(path); h == nil || h.Command != "second" {
		t.Errorf("Holding = %+v, want the waiter's note", h)
	}
}

// A wait ends with its context; the lock it would have got later is let
// go again, so nobody is locked out by a wait given up.
func TestAWaitEndsWithItsContext(t *testing.T) {
	path := ownfile.PathFile(filepath.Join(t.TempDir(), "state.lock"))
	held, err := Acquire(context.Background(), path, Holder{Command: "first"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(20 * time.Millisecond); cancel() }()
	if _, err := Acquire(ctx, path, Holder{Command: "gave up"}, time.Minute); !errors.Is(err, context.Canceled) {
		t.Fatalf("a cancelled wait: %v", err)
	}
	held.Release()
	third, err := Acquire(context.Background(), path, Holder{Command: "third"}, 10*time.Second)
	if err != nil {
		t.Fatalf("the lock stayed taken by a wait given up: %v", err)
	}
	third.Release()
}

// A wait past its timeout names the holder.
func TestAWaitPastItsTimeoutNamesTheHolder(t *testing.T) {
	path := ownfile.PathFile(filepath.Join(t.TempDir(), "state.lock"))
	held, err := Acquire(context.Background(), path, Holder{Command: "sbf up", PID: 9}, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release()
	_, err = Acquire(context.Background(), path, Holder{Command: "second"}, 30*time.Millisecond)
	var le *LockedError
	if !errors.As(err, &le) || le.Holder == nil || le.Holder.PID != 9 {
		t.Errorf("Acquire past its timeout: %v", err)
	}
}

// A lock file is sbf's own: one that is a link (to a file the operator
// keeps, or to /dev/zero) is refused before anything is written or read
// through it, and so is its note.
func TestALockFileThatIsALinkIsRefused(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "bashrc")
	if err := os.WriteFile(target, []byte("export PATH\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, to := range map[string]string{"state.lock": target, "zero.lock": "/dev/zero"} {
		if err := os.Symlink(to, filepath.Join(dir, name)); err != nil {
			t.Skip("no symbolic links here:", err)
		}
		lock := ownfile.At(dir).File(name)
		_, err := Acquire(context.Background(), lock, Holder{Command: "sbf apply"}, 0)
		if c := coded.Of(err, coded.Unknown); c.Code != coded.StateFileLink {
			t.Errorf("%s: %v", name, err)
		}
		if Holding(lock) != nil || ReadHolder(lock) != nil {
			t.Errorf("%s: a note was read through the link", name)
		}
	}
	if data, _ := os.ReadFile(target); string(data) != "export PATH\n" {
		t.Errorf("the link's target was written: %q", data)
	}
}
