package reconcile

import (
	"context"
	"errors"
	"fmt"
	"slices"

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
const locksDir = "locks"

// held are the sandbox locks of one run.
type held struct {
	locks map[string]*flock.Lock
	busy  map[string]*flock.Holder // sandboxes another run holds, that this one leaves alone
	// left are sandboxes found only on the backends that the run leaves:
	// another run's (also in busy), or made by a run that ended meanwhile.
	left []string
}

func (h *held) release() {
	for _, l := range h.locks {
		l.Release()
	}
}

// names are the sandboxes held.
func (h *held) names() []string {
	out := make([]string, 0, len(h.locks))
	for n := range h.locks {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// lockMode says what a run does about a sandbox another run holds.
type lockMode int

const (
	waitBusy lockMode = iota // wait up to LockTimeout, then fail naming the holder (a command)
	skipBusy                 // leave it to the run that holds it (a loop pass)
	peekBusy                 // wait up to LockTimeout for it, then note who holds it (a plan writes nothing)
)

// lockSandboxes takes the locks of the named sandboxes, sorted so that two
// runs never wait for each other in a circle.
func (e *Engine) lockSandboxes(ctx context.Context, dir string, names []string, mode lockMode) (*held, error) {
	h := &held{locks: map[string]*flock.Lock{}, busy: map[string]*flock.Holder{}}
	if len(names) == 0 {
		return h, nil
	}
	ldir := state.Folder(dir).Sub(locksDir)
	if mode == peekBusy { // a plan writes nothing: it looks, waiting up to LockTimeout for a run to end
		for _, name := range names {
			if who := flock.WaitFree(ctx, ldir.File(name+".lock"), e.LockTimeout); who != nil {
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
	wait := e.LockTimeout
	if mode == skipBusy {
		wait = 0
	}
	for _, name := range slices.Sorted(slices.Values(names)) {
		l, err := flock.Acquire(ctx, ldir.File(name+".lock"), e.holder(), wait)
		var le *flock.LockedError
		switch {
		case err == nil:
			h.locks[name] = l
		case errors.As(err, &le) && mode != waitBusy:
			h.busy[name] = holderOf(le)
		case errors.As(err, &le):
			h.release()
			return nil, fmt.Errorf("sandbox %s is being changed by another sbf run: %w; wait for it to finish "+
				"or pass --lock-timeout (for example --lock-timeout 5m)", name, err)
		default:
			h.release()
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

// touched are the sandboxes a run may act on: its targets, else every one
// declared or recorded.
func touched(r *spec.Resolved, rec *state.File, targets []string) []string {
	if len(targets) > 0 {
		return targets
	}
	seen := map[string]bool{}
	for n := range r.Config.Sandboxes {
		seen[n] = true
	}
	for n := range rec.Sandboxes {
		seen[n] = true
	}
	out := make([]string, 0, len(seen))
	for n := range seen {
		out = append(out, n)
	}
	return out
}

// withSources adds to names the sandboxes whose disks theirs are copied
// from: a run that may make a copy holds its source, so no other run
// changes (or a backend stops) the source meanwhile.
func withSources(r *spec.Resolved, rec *state.File, names []string) []string {
	out := slices.Clone(names)
	for _, name := range names {
		if src := plan.SourceOf(r, rec, name); src != "" && !slices.Contains(out, src) {
			out = append(out, src)
		}
	}
	return out
}

// yieldCopies lets go of each sandbox whose source another run holds: a
// pass that leaves the source alone leaves its copies alone too.
func (h *held) yieldCopies(source func(name string) string) {
	for name, l := range h.locks {
		if who := h.busy[source(name)]; who != nil {
			l.Release()
			delete(h.locks, name)
			h.busy[name] = who
		}
	}
}

// lockFound holds, or leaves to their runs, the sandboxes the run found
// only on the backends (plan.Found). Such an instance was made or claimed
// by a request's run after this run read the desired state and the state
// file (that run holds the sandbox from before it plans until it has
// written both), or is an orphan. Each lock is tried once (a plan looks):
// a sandbox another run holds is that run's; one the files name by the
// time its lock is free belonged to a run that ended meanwhile, and the
// next pass sees it whole. What is left is an orphan, held and this run's
// to delete.
func (e *Engine) lockFound(ctx context.Context, u *run, found []string) error {
	if u.locks == nil || len(found) == 0 {
		return nil
	}
	mode := skipBusy
	if u.planOnly {
		mode = peekBusy
	}
	h, err := e.lockSandboxes(ctx, u.dir, found, mode)
	if err != nil {
		return err
	}
	defer h.release() // of the locks not kept below
	var free []string
	for _, name := range found {
		if who := h.busy[name]; who != nil {
			u.locks.busy[name] = who
			u.locks.left = append(u.locks.left, name)
		} else {
			free = append(free, name)
		}
	}
	if len(free) == 0 {
		return nil
	}
	named, err := e.namedNow(u)
	if err != nil {
		return err
	}
	for _, name := range free {
		if named(name) {
			u.locks.left = append(u.locks.left, name)
		} else if l := h.locks[name]; l != nil {
			u.locks.locks[name] = l
			delete(h.locks, name)
		}
	}
	return nil
}

// namedNow says whether the desired state or the state file, read again
// now, names a sandbox.
func (e *Engine) namedNow(u *run) (func(name string) bool, error) {
	rec, err := state.Read(u.dir, u.root, u.id)
	if err != nil {
		return nil, err
	}
	ws := u.ws
	ws.Now = u.now
	r, err := e.Load(ws)
	if err != nil {
		return nil, err
	}
	return func(name string) bool {
		_, declared := r.Config.Sandboxes[name]
		return declared || rec.Sandboxes[name] != nil
	}, nil
}

// leftAlone are the sandboxes found only on the backends that the run
// leaves to another run (lockFound).
func (h *held) leftAlone() []string {
	if h == nil {
		return nil
	}
	return h.left
}
