package reconcile

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/internal/clock"
	"github.com/sandboxforge/sbf/internal/coded"
	"github.com/sandboxforge/sbf/internal/testutil"
	"github.com/sandboxforge/sbf/reconcile/loop"
	"github.com/sandboxforge/sbf/spec"
)

// firstBackoff is the loop's wait after one failed pass (reconcile/loop).
const firstBackoff = 5 * time.Second

// loopRun is a reconcile loop running in a test; it knows when the loop
// last waited, until when and with how many passes running.
type loopRun struct {
	t       *testing.T
	clock   *clock.Fake
	mu      sync.Mutex
	waited  bool
	until   time.Time
	running int
	cancel  func()
	done    chan error
}

func startLoop(t *testing.T, e *Engine, clk *clock.Fake, o WatchOptions) *loopRun {
	ctx, cancel := context.WithCancel(context.Background())
	l := &loopRun{t: t, clock: clk, cancel: cancel, done: make(chan error, 1)}
	if o.Jitter == nil {
		o.Jitter = func(d time.Duration) time.Duration { return d } // waits these tests can count
	}
	go func() { l.done <- e.watch(ctx, o, l.asleep) }()
	return l
}

func (l *loopRun) asleep(until time.Time, running int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.waited, l.until, l.running = true, until, running
}

// stop ends the loop and waits for it (for the passes it waits for).
func (l *loopRun) stop() {
	l.cancel()
	select {
	case err := <-l.done:
		if err != nil {
			l.t.Errorf("Watch returned %v", err)
		}
	case <-time.After(10 * time.Second):
		l.t.Error("the loop did not stop: a pass never ended")
	}
}

// waitFor waits until the loop waits in a state ok accepts.
func (l *loopRun) waitFor(what string, ok func(until time.Time, running int) bool) {
	l.t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		l.mu.Lock()
		done := l.waited && ok(l.until, l.running)
		l.mu.Unlock()
		if done {
			return
		}
		if time.Now().After(deadline) {
			l.t.Fatalf("the loop never waited for %s", what)
		}
	}
}

// settle waits until the loop sleeps with no pass running, until a time
// the clock has not reached (so its timer has not fired).
func (l *loopRun) settle() {
	l.t.Helper()
	l.waitFor("the next due time with nothing running", func(until time.Time, running int) bool {
		return running == 0 && (until.IsZero() || until.After(l.clock.Now()))
	})
}

// lister is a driver's List.
type lister = func(context.Context) ([]drivers.Instance, error)

// listing is a driver whose List calls go through a test's function,
// which may call the driver's own (next).
type listing struct {
	Driver
	list func(ctx context.Context, next lister) ([]drivers.Instance, error)
}

func (d listing) List(ctx context.Context) ([]drivers.Instance, error) {
	return d.list(ctx, d.Driver.List)
}

func (h *harness) onList(list func(context.Context, lister) ([]drivers.Instance, error)) {
	h.eng.Drivers = func(name string, r *spec.Resolved) (Driver, error) {
		d, err := h.driver(name, r)
		if err != nil {
			return nil, err
		}
		return listing{Driver: d, list: list}, nil
	}
}

// reportErrors starts the loop over h's workspace, passing on each
// pass's error.
func (h *harness) reportErrors(t *testing.T, o WatchOptions) (*loopRun, <-chan error) {
	errs := make(chan error, 16)
	o.Workspaces = func() []spec.Options { return []spec.Options{h.ws()} }
	o.Report = func(_ spec.Options, _ *Result, err error) { errs <- err }
	return startLoop(t, h.eng, h.clock, o), errs
}

func nextError(t *testing.T, errs <-chan error) error {
	t.Helper()
	select {
	case err := <-errs:
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("no reconcile pass")
		return nil
	}
}

// A driver call that hangs is cancelled at the pass timeout, not before;
// the pass fails and the workspace is retried with backoff.
func TestWatchCancelsAHungPassAtItsTimeout(t *testing.T) {
	h := newHarness(t, "[vm]\ndriver = \"sim\"\n[sandboxes.api]\n")
	hung := make(chan context.Context, 1)
	var calls atomic.Int32
	h.onList(func(ctx context.Context, list lister) ([]drivers.Instance, error) {
		if calls.Add(1) > 1 {
			return list(ctx)
		}
		hung <- ctx
		<-ctx.Done() // a limactl that never answers, killed when ctx ends
		return nil, fmt.Errorf("limactl list: %w", ctx.Err())
	})
	loop, errs := h.reportErrors(t, WatchOptions{Interval: time.Hour, PassTimeout: 10 * time.Minute})
	defer loop.stop()
	var ctx context.Context
	select {
	case ctx = <-hung:
	case <-time.After(10 * time.Second):
		t.Fatal("the pass never listed")
	}
	h.clock.Advance(10*time.Minute - time.Second)
	if ctx.Err() != nil {
		t.Fatal("the driver call was cancelled before the pass timeout")
	}
	h.clock.Advance(time.Second)
	if err := nextError(t, errs); !errors.Is(err, ErrPassTimeout) || !errors.Is(err, context.Canceled) {
		t.Fatalf("the hung pass reported %v; want its timeout and the driver's cancellation", err)
	}
	loop.settle()
	h.clock.Advance(firstBackoff)
	if err := nextError(t, errs); err != nil || calls.Load() < 2 {
		t.Fatalf("the retry after the timeout: %v (%d lists)", err, calls.Load())
	}
}

// Stopping the loop lets a running pass finish, but a hung one only until
// its timeout: a stop never waits forever.
func TestWatchStopWaitsForAHungPassOnlyUntilItsTimeout(t *testing.T) {
	h := newHarness(t, "[vm]\ndriver = \"sim\"\n[sandboxes.api]\n")
	hung := make(chan context.Context, 1)
	h.onList(func(ctx context.Context, _ lister) ([]drivers.Instance, error) {
		hung <- ctx
		<-ctx.Done()
		return nil, ctx.Err()
	})
	loop, errs := h.reportErrors(t, WatchOptions{Interval: time.Hour, PassTimeout: time.Minute})
	ctx := <-hung
	loop.cancel()
	select {
	case <-loop.done:
		t.Fatal("the loop stopped without waiting for its running pass")
	case <-ctx.Done():
		t.Fatal("stopping the loop cancelled a workspace's pass")
	case <-time.After(50 * time.Millisecond): // the stop is waiting
	}
	h.clock.Advance(time.Minute)
	loop.stop()
	if err := nextError(t, errs); !errors.Is(err, ErrPassTimeout) {
		t.Errorf("the pass cut short by its timeout reported %v", err)
	}
}

// A pass that panics is reported with its workspace and retried with
// backoff; the loop, and the process, go on.
func TestWatchSurvivesAPanickingPass(t *testing.T) {
	h := newHarness(t, "[vm]\ndriver = \"sim\"\n[sandboxes.api]\n")
	var calls atomic.Int32
	h.onList(func(ctx context.Context, list lister) ([]drivers.Instance, error) {
		if calls.Add(1) == 1 {
			panic("driver bug")
		}
		return list(ctx)
	})
	loop, errs := h.reportErrors(t, WatchOptions{Interval: time.Hour})
	defer loop.stop()
	var p *PassPanic
	if err := nextError(t, errs); !errors.As(err, &p) || p.Workspace != h.root || p.Value != "driver bug" ||
		!strings.Contains(err.Error(), "loop_test.go") {
		t.Fatalf("the panicking pass reported %v; want the workspace, the value and the stack", err)
	}
	loop.settle()
	h.clock.Advance(firstBackoff - time.Second)
	loop.settle()
	h.clock.Advance(time.Second)
	// The retry also shows the panic released the workspace's state lock.
	if err := nextError(t, errs); err != nil || calls.Load() != 2 {
		t.Fatalf("the retry after the panic: %v (%d lists)", err, calls.Load())
	}
}

// A workspace parked on an invalid global configuration runs again once
// the global file is fixed, and not before.
func TestWatchWakesWhenTheGlobalConfigIsFixed(t *testing.T) {
	h := newHarness(t, "[vm]\ndriver = \"sim\"\n[sandboxes.api]\n")
	home := t.TempDir()
	global := filepath.Join(home, "sandboxforge", "config.toml")
	testutil.WriteFile(t, global, "[vm]\ncpus = 0\n")
	errs := make(chan error, 16)
	loop := startLoop(t, h.eng, h.clock, WatchOptions{
		Workspaces: func() []spec.Options {
			ws := h.ws()
			ws.ConfigHome = home
			return []spec.Options{ws}
		},
		Interval: time.Minute,
		Report:   func(_ spec.Options, _ *Result, err error) { errs <- err },
	})
	defer loop.stop()
	if err := nextError(t, errs); !errors.Is(err, spec.ErrInvalid) || !strings.Contains(err.Error(), global) {
		t.Fatalf("first pass: %v; want the global file's error", err)
	}
	for range 3 {
		loop.settle()
		h.clock.Advance(time.Minute)
	}
	loop.settle()
	if len(errs) > 0 {
		t.Fatalf("an unchanged invalid configuration was retried: %v", <-errs)
	}
	testutil.WriteFile(t, global, "[vm]\ncpus = 2\n")
	h.clock.Advance(time.Minute)
	if err := nextError(t, errs); err != nil {
		t.Fatalf("the pass after the fix: %v", err)
	}
}

// A Wake that comes while a workspace's pass runs (a lease written after
// the pass read the files) runs it again as soon as the pass ends.
func TestWatchRerunsAWorkspaceWokenDuringItsPass(t *testing.T) {
	h := newHarness(t, "[vm]\ndriver = \"sim\"\n[sandboxes.api]\n")
	listing, release := make(chan struct{}, 1), make(chan struct{})
	var calls atomic.Int32
	h.onList(func(ctx context.Context, list lister) ([]drivers.Instance, error) {
		if calls.Add(1) == 1 {
			listing <- struct{}{}
			<-release
		}
		return list(ctx)
	})
	wake := make(chan struct{})
	loop, errs := h.reportErrors(t, WatchOptions{Interval: time.Hour, Wake: wake})
	defer loop.stop()
	<-listing
	wake <- struct{}{}
	close(release)
	for range 2 { // no clock advance: the second pass is due at once
		if err := nextError(t, errs); err != nil {
			t.Fatal(err)
		}
	}
}

// Terminal errors are recognised by errors.Is through any wrapping; a
// configuration spec.Load rejects is terminal, and so is a refusal
// (configuration, capacity, backend) unless it is joined with a failure
// retrying may fix.
func TestTerminalErrors(t *testing.T) {
	invalid := spec.Errors{{File: ".sandboxforge.toml", Key: "vm.cpus", Message: "must be positive"}}
	marked := loop.TerminalError(coded.New(coded.InstanceTerminal, nil, "gone for good"))
	for _, c := range []struct {
		err  error
		want bool
	}{
		{marked, true},
		{fmt.Errorf("applying: %w", marked), true},
		{fmt.Errorf("loading: %w", invalid), true},
		{errors.Join(errors.New("timeout"), invalid), true},
		{coded.New(coded.ConfigInvalid, nil, "a refusal"), true},
		{fmt.Errorf("sandbox api: %w", coded.New(coded.InstanceLimit, nil, "the host is full")), true},
		{errors.Join(coded.New(coded.BackendUnavailable, nil, "no limactl"), errors.New("timeout")), false},
		{coded.New(coded.InstanceTerminal, nil, "another code is not a refusal"), false},
		{errors.New("network down"), false},
	} {
		if got := terminal(c.err); got != c.want {
			t.Errorf("terminal(%v) = %v", c.err, got)
		}
	}
	if coded.Of(marked, coded.Unknown).Code != coded.InstanceTerminal || marked.Error() != "gone for good" {
		t.Errorf("the mark changed the error: %v", marked)
	}
	if loop.TerminalError(nil) != nil {
		t.Error("TerminalError(nil) is an error")
	}
}

// A refusal (here the backend is missing) parks the workspace instead of
// retrying it with backoff; the pass runs again once ParkedRecheck passes,
// since installing a backend changes no file of the workspace's.
func TestWatchParksARefusalAndLooksAgainLater(t *testing.T) {
	h := newHarness(t, "[vm]\ndriver = \"sim\"\n[sandboxes.api]\n")
	var calls atomic.Int32
	h.eng.Drivers = func(string, *spec.Resolved) (Driver, error) {
		calls.Add(1)
		return nil, coded.New(coded.BackendUnavailable, nil, "limactl not found")
	}
	loop, errs := h.reportErrors(t, WatchOptions{Interval: time.Minute, ParkedRecheck: 10 * time.Minute})
	defer loop.stop()
	if err := nextError(t, errs); !terminal(err) {
		t.Fatalf("first pass: %v, want a refusal", err)
	}
	first := calls.Load()
	for range 9 {
		loop.settle()
		h.clock.Advance(time.Minute)
	}
	loop.settle()
	if calls.Load() != first {
		t.Fatalf("a parked workspace was retried before ParkedRecheck (%d driver calls, %d before)", calls.Load(), first)
	}
	h.clock.Advance(time.Minute)
	if err := nextError(t, errs); !terminal(err) || calls.Load() == first {
		t.Fatalf("no pass after ParkedRecheck: %v", err)
	}
}

// Stopping the loop gives a hung workspace pass StopGrace, then cancels
// it (long before a 30-minute pass timeout), so a service manager's stop
// timeout never kills the process mid-step.
func TestWatchStopCancelsAPassAfterItsGrace(t *testing.T) {
	h := newHarness(t, "[vm]\ndriver = \"sim\"\n[sandboxes.api]\n")
	hung := make(chan context.Context, 1)
	h.onList(func(ctx context.Context, _ lister) ([]drivers.Instance, error) {
		hung <- ctx
		<-ctx.Done()
		return nil, ctx.Err()
	})
	loop, errs := h.reportErrors(t, WatchOptions{Interval: time.Hour, PassTimeout: 30 * time.Minute,
		StopGrace: 2 * time.Minute})
	ctx := <-hung
	loop.cancel()
	for i := 0; ctx.Err() == nil; i++ {
		if i > 2000 {
			t.Fatal("the pass was not cancelled after its grace")
		}
		h.clock.Advance(100 * time.Millisecond) // the grace timer starts once the stop is seen
		time.Sleep(time.Millisecond)
	}
	if elapsed := h.clock.Now().Sub(t0); elapsed < 2*time.Minute || elapsed >= 30*time.Minute {
		t.Errorf("the pass was cancelled %s after the stop, want its 2-minute grace", elapsed)
	}
	loop.stop()
	if err := nextError(t, errs); !errors.Is(err, ErrStopGrace) {
		t.Errorf("the pass cut short by the stop reported %v", err)
	}
}

// The loop says what it holds after each pass: a refused workspace is
// counted as parked.
func TestWatchReportsItsOwnState(t *testing.T) {
	h := newHarness(t, "[vm]\ndriver = \"sim\"\n[sandboxes.api]\n")
	h.eng.Drivers = func(string, *spec.Resolved) (Driver, error) {
		return nil, coded.New(coded.BackendUnavailable, nil, "limactl not found")
	}
	states := make(chan LoopState, 4)
	loop, errs := h.reportErrors(t, WatchOptions{Interval: time.Minute, State: func(s LoopState) { states <- s }})
	defer loop.stop()
	nextError(t, errs)
	if st := <-states; st.Entries != 1 || st.Parked != 1 || st.Running != 0 {
		t.Errorf("after a refused pass: %+v", st)
	}
}
