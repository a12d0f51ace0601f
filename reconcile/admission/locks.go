package admission

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/sandboxforge/sbf/internal/flock"
	"github.com/sandboxforge/sbf/reconcile/plan"
	"github.com/sandboxforge/sbf/spec"
	"github.com/sandboxforge/sbf/state"
)

// A run holds each sandbox it acts on by a lock of that sandbox's own
// (.sandboxforge/locks/NAME.lock), from before it plans until its actions
// end: two runs never act on one sandbox at once, while runs on different
// sandboxes of a workspace go side by side (the state file's lock guards
// only its writes). A crashed run's locks go with its process.
const LocksDir = "locks"

// Held are the sandbox locks of one run.
type Held struct {
	locks map[string]*flock.Lock
	busy  map[string]*flock.Holder // sandboxes another run holds, that this one leaves alone
	// left are sandboxes found only on the backends that the run leaves:
	// another run's (also in busy), or made by a run that ended meanwhile.
	left []string
}

// Release lets go of every lock held.
func (h *Held) Release() {
	for _, l := range h.locks {
		l.Release()
	}
}

// Names are the sandboxes held.
func (h *Held) Names() []string {
	out := make([]string, 0, len(h.locks))
	for n := range h.locks {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// Mode says what a run does about a sandbox another run holds.
type Mode int

const (
	WaitBusy Mode = iota // wait up to Timeout, then fail naming the holder (a command)
	SkipBusy             // leave it to the run that holds it (a loop pass)
	PeekBusy             // wait up to LockTimeout for it, then note who holds it (a plan writes nothing)
)

// Locks takes sandbox locks: Timeout is how long a run waits for a busy
// sandbox (--lock-timeout), Who the holder it records.
type Locks struct {
	Timeout time.Duration
	Who     flock.Holder
}

// Sandboxes takes the locks of the named sandboxes, sorted so that two
// runs never wait for each other in a circle.
func (k Locks) Sandboxes(ctx context.Context, dir string, names []string, mode Mode) (*Held, error) {
	h := &Held{locks: map[string]*flock.Lock{}, busy: map[string]*flock.Holder{}}
	if len(names) == 0 {
		return h, nil
	}
	ldir := state.Folder(dir).Sub(LocksDir)
	if mode == PeekBusy { // a plan writes nothing: it looks, waiting up to LockTimeout for a run to end
		for _, name := range names {
			if who := flock.WaitFree(ctx, ldir.File(name+".lock"), k.Timeout); who != nil {
				h.busy[name] = who
			}
		}
		return h, nil
	}
	if err := state.EnsureDir(dir); err != nil {
		return nil, err
	} else if err := ldir.Make(); err != nil {
		return nil, fmt.Errorf("creating %s: %w", ldir.Path(), err)
	}
	wait := k.Timeout
	if mode == SkipBusy {
		wait = 0
	}
	for _, name := range slices.Sorted(slices.Values(names)) {
		l, err := flock.Acquire(ctx, ldir.File(name+".lock"), k.Who, wait)
		var le *flock.LockedError
		switch {
		case err == nil:
			h.locks[name] = l
		case errors.As(err, &le) && mode != WaitBusy:
			h.busy[name] = holderOf(le)
		case errors.As(err, &le):
			h.Release()
			return nil, fmt.Errorf("sandbox %s is being changed by another sbf run: %w; wait for it to finish "+
				"or pass --lock-timeout (for example --lock-timeout 5m)", name, err)
		default:
			h.Release()
			return nil, err
		}
	}
	return h, nil
}

func holderOf(le *flock.LockedError) *flock.Holder {
	if le.Holder != nil {
		return le.Holder
	}
	return &flock.Holder{Command: "another sbf process"}
}

// WithSources adds to names the sandboxes whose disks theirs are copied
// from: a run that may make a copy holds its source, so no other run
// changes (or a backend stops) the source meanwhile.
func WithSources(r *spec.Resolved, rec *state.File, names []string) []string {
	out := slices.Clone(names)
	for _, name := range names {
		if src := plan.SourceOf(r, rec, name); src != "" && !slices.Contains(out, src) {
			out = append(out, src)
		}
	}
	return out
}

// YieldCopies lets go of each sandbox whose source another run holds: a
// pass that leaves the source alone leaves its copies alone too.
func (h *Held) YieldCopies(source func(name string) string) {
	for name, l := range h.locks {
		if who := h.busy[source(name)]; who != nil {
			l.Release()
			delete(h.locks, name)
			h.busy[name] = who
		}
	}
}

// Found holds, or leaves to their runs, the sandboxes a run found only on
// the backends (plan.Found), adding them to into. Such an instance was made
// or claimed by a request's run after this run read the desired state and
// the state file (that run holds the sandbox from before it plans until it
// has written both), or is an orphan. Each lock is tried once (peek: a plan
// looks): a sandbox another run holds is that run's; one the files name
// (namedNow reads them again) by the time its lock is free belonged to a run
// that ended meanwhile, and the next pass sees it whole. What is left is an
// orphan, held and this run's to delete.
func (k Locks) Found(ctx context.Context, into *Held, dir string, found []string, peek bool,
	namedNow func() (func(name string) bool, error)) error {
	if into == nil || len(found) == 0 {
		return nil
	}
	mode := SkipBusy
	if peek {
		mode = PeekBusy
	}
	// A sandbox the run holds already (it had a record when the run took
	// its locks) is not locked twice: a second lock of this process's own
	// would find it busy.
	toLock := slices.DeleteFunc(slices.Clone(found), into.Holds)
	h, err := k.Sandboxes(ctx, dir, toLock, mode)
	if err != nil {
		return err
	}
	defer h.Release() // of the locks not kept below
	var free []string
	for _, name := range found {
		if who := h.busy[name]; who != nil {
			into.busy[name] = who
			into.left = append(into.left, name)
		} else {
			free = append(free, name)
		}
	}
	if len(free) == 0 {
		return nil
	}
	named, err := namedNow()
	if err != nil {
		return err
	}
	for _, name := range free {
		if named(name) {
			into.left = append(into.left, name)
		} else if into.Holds(name) {
			continue // an orphan now, and held already
		} else if l := h.locks[name]; l != nil {
			into.locks[name] = l
			delete(h.locks, name)
		}
	}
	return nil
}

// TryMore adds to into the locks of names (less those it holds) that are
// free now, trying each once and noting no holder: for what a run does on
// the side, such as archiving an ended record, which it leaves to a later
// run when another holds the sandbox. Waiting for none, it keeps the lock
// order's promise however late it comes.
func (k Locks) TryMore(ctx context.Context, into *Held, dir string, names []string) error {
	names = slices.DeleteFunc(slices.Clone(names), into.Holds)
	h, err := k.Sandboxes(ctx, dir, names, SkipBusy)
	if err != nil {
		return err
	}
	maps.Copy(into.locks, h.locks)
	return nil
}

// Holds says whether the run holds sandbox name's lock (none: it holds no lock yet).
func (h *Held) Holds(name string) bool { return h != nil && h.locks[name] != nil }

// Busy are the runs holding the sandboxes this run leaves alone, by sandbox.
func (h *Held) Busy() map[string]*flock.Holder { return h.busy }

// Partial says whether the run leaves any sandbox to another run.
func (h *Held) Partial() bool { return len(h.busy) > 0 || len(h.left) > 0 }

// LeftAlone are the sandboxes found only on the backends that the run
// leaves to another run (Found).
func (h *Held) LeftAlone() []string {
	if h == nil {
		return nil
	}
	return h.left
}
