package admission

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/internal/clock"
	"github.com/sandboxforge/sbf/internal/coded"
	"github.com/sandboxforge/sbf/internal/flock"
	"github.com/sandboxforge/sbf/state"
)

// hostWorld is the instances on a host as the backends list them.
var t0 = time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)

type hostWorld struct {
	mu        sync.Mutex
	instances map[string]bool
}

func (w *hostWorld) list(context.Context) ([]drivers.Instance, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []drivers.Instance
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for n := range w.instances {
			if !yield(n) {
				return
			}
		}
	}) {
		out = append(out, drivers.Instance{Name: name})
	}
	return out, nil
}

func (w *hostWorld) add(name string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.instances[name] = true
}

func (w *hostWorld) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.instances)
}

// admitter is one process's admission on a shared host folder.
func admitter(dir string, c clock.Clock, max int,
	list func(context.Context) ([]drivers.Instance, error)) *Host {
	return &Host{Dir: dir, Max: max, Clock: c, List: list, Who: flock.Holder{Command: "test", PID: os.Getpid()}}
}

// The race the cap once lost: a full count listed the backends, then a
// create it had not seen finished and dropped its reservation, then the
// count looked at reservations and saw neither. Here the create finishes
// exactly between the two looks of the second count.
func TestAFullCountSeesACreateThatEndsWhileItCounts(t *testing.T) {
	dir := t.TempDir()
	c := clock.NewFake(t0)
	world := &hostWorld{instances: map[string]bool{"sbf-00000000-x": true}}
	a := admitter(dir, c, 2, world.list)
	releaseA, err := a.Admit(context.Background(), "sbf-00000000-a")
	if err != nil {
		t.Fatal(err)
	}
	c.Advance(time.Minute) // the ledger's full count is old: the next admission counts again
	var once sync.Once
	b := admitter(dir, c, 2, func(ctx context.Context) ([]drivers.Instance, error) {
		listed, err := world.list(ctx)
		once.Do(func() { world.add("sbf-00000000-a"); releaseA() }) // a's create ends now
		return listed, err
	})
	if _, err := b.Admit(context.Background(), "sbf-00000000-b"); !isLimit(err) {
		t.Fatalf("the second create was admitted past the cap of 2 (x and a exist): %v", err)
	}
}

func isLimit(err error) bool {
	var ce *coded.Error
	return errors.As(err, &ce) && ce.Code == coded.InstanceLimit
}

// Many processes create at once against a small cap: at no moment do more
// instances exist than the cap allows, whichever way creates, records and
// releases interleave; deletes free their places.
func TestConcurrentCreatesNeverPassTheCap(t *testing.T) {
	for round := range 20 {
		dir := t.TempDir()
		world := &hostWorld{instances: map[string]bool{}}
		const max = 5
		var admitted, refused atomic.Int32
		var wg sync.WaitGroup
		for i := range 30 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				// A process each, its clock moving on so some counts are full ones.
				c := clock.NewFake(t0.Add(time.Duration(i) * 7 * time.Second))
				h := admitter(dir, c, max, world.list)
				name := fmt.Sprintf("sbf-00000000-sb%02d", i)
				release, err := h.Admit(context.Background(), name)
				if err != nil {
					if !isLimit(err) {
						t.Errorf("round %d: %v", round, err)
					}
					refused.Add(1)
					return
				}
				admitted.Add(1)
				if i%3 == 0 {
					time.Sleep(time.Millisecond) // a slower create
				}
				world.add(name)
				if n := world.count(); n > max {
					t.Errorf("round %d: %d instances exist under a cap of %d", round, n, max)
				}
				release()
			}()
		}
		wg.Wait()
		if admitted.Load() != max || world.count() != max {
			t.Errorf("round %d: %d admitted, %d exist, want %d", round, admitted.Load(), world.count(), max)
		}
	}
}

// Instances another person holds on a shared backend (a team's cluster namespace) are listed
// but are not this host's: a cap of 1 admits a create beside two of a teammate's, and still
// refuses one beside an instance of its own.
func TestAnotherPersonsInstancesDoNotCountAgainstTheCap(t *testing.T) {
	theirs := []drivers.Instance{{Name: "sbf-11111111-api", HeldByAnother: true},
		{Name: "sbf-22222222-web", HeldByAnother: true}}
	list := func(context.Context) ([]drivers.Instance, error) { return theirs, nil }
	a := admitter(t.TempDir(), clock.NewFake(t0), 1, list)
	release, err := a.Admit(context.Background(), "sbf-00000000-mine")
	if err != nil {
		t.Fatalf("a create beside a teammate's two instances, cap 1: %v", err)
	}
	release()
	theirs = append(theirs, drivers.Instance{Name: "sbf-00000000-mine"})
	b := admitter(t.TempDir(), clock.NewFake(t0), 1, list)
	if _, err := b.Admit(context.Background(), "sbf-00000000-second"); !isLimit(err) {
		t.Fatalf("a second create of this host's own past the cap of 1 was admitted: %v", err)
	}
	// A teammate's instance one of this host's sandboxes runs in (a spare it adopted) is this
	// host's: with it, the cap of 2 is full.
	dir := t.TempDir()
	idx := state.OpenHostIndex(dir)
	if err := idx.Put(context.Background(), state.IndexEntry{Instance: "sbf-11111111-api", Sandbox: "api",
		Driver: "kubevirt", WorkspaceID: "00000000"}); err != nil {
		t.Fatal(err)
	}
	c := admitter(dir, clock.NewFake(t0), 2, list)
	c.Index = idx
	if _, err := c.Admit(context.Background(), "sbf-00000000-third"); !isLimit(err) {
		t.Fatalf("a create past the cap of 2 (this host's own and a teammate's spare it adopted) was admitted: %v",
			err)
	}
}
