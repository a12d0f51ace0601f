// Package flock serialises sbf processes with OS file locks. In each
// lock file it keeps a small JSON note naming the holder, so a waiting
// process can say who it waits for. Lock files are sbf's own (package
// ownfile): never opened through a link, regular files only, and a note is
// read within a bound.
package flock

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/sandboxforge/sbf/internal/clock"
	"github.com/sandboxforge/sbf/internal/coded"
	"github.com/sandboxforge/sbf/internal/ownfile"
	"github.com/sandboxforge/sbf/internal/progress"
)

// Holder describes who holds a lock.
type Holder struct {
	Command string    `json:"command"`
	PID     int       `json:"pid"`
	Since   time.Time `json:"since"`
	Host    string    `json:"host,omitempty"`
}

// LockedError is returned when the lock stays taken past the timeout.
type LockedError struct {
	Path   string
	Holder *Holder // nil when the note could not be read
}

func (e *LockedError) Error() string {
	if e.Holder == nil {
		return fmt.Sprintf("%s is locked by another sbf process", e.Path)
	}
	return fmt.Sprintf("%s is locked by %q (pid %d) since %s", e.Path, e.Holder.Command, e.Holder.PID,
		e.Holder.Since.UTC().Format(time.RFC3339))
}

// Lock is a held lock.
type Lock struct {
	f    *os.File
	path string
}

// maxNote bounds the holder note read from a lock file: a note sbf wrote
// is a few hundred bytes.
const maxNote = 4 << 10

func open(lock ownfile.File) (*os.File, error) { return lock.OpenFile(os.O_RDWR|os.O_CREATE, 0o644) }

// peekGrace is how long Acquire keeps trying past its timeout when the lock
// is held without a note: Holding takes the lock for a look, and a look
// must not make a run that tries once fail.
const peekGrace = 100 * time.Millisecond

// Acquire takes the lock file, waiting until timeout (zero: try once;
// a holder without a note is given peekGrace) or until ctx ends. A wait
// sleeps in the kernel, so a lock let go is taken at once. The holder note
// is written into the lock file once the lock is held.
func Acquire(ctx context.Context, lock ownfile.File, who Holder, timeout time.Duration) (*Lock, error) {
	path := lock.Path()
	f, err := open(lock)
	if err != nil {
		return nil, fmt.Errorf("opening lock %s: %w", path, err)
	}
	err = tryLock(f)
	if errors.Is(err, errWouldBlock) && timeout > 0 {
		f.Close()
		f, err = waitLock(ctx, lock, timeout)
	}
	var holder *Holder
	if errors.Is(err, errWouldBlock) {
		if holder = ReadHolder(lock); holder == nil { // no note: likely a Holding look, over in microseconds
			err = nil
			if f == nil {
				f, err = open(lock)
			}
			if err == nil {
				err = pollLock(ctx, f, peekGrace)
			}
			holder = ReadHolder(lock)
		}
	}
	switch {
	case err == nil:
	case errors.Is(err, errWouldBlock) && ctx.Err() == nil:
		closeFile(f)
		return nil, &LockedError{Path: path, Holder: holder}
	case ctx.Err() != nil:
		closeFile(f)
		return nil, ctx.Err()
	default:
		closeFile(f)
		return nil, fmt.Errorf("locking %s: %w", path, err)
	}
	writeNote(f, who)
	return &Lock{f: f, path: path}, nil
}

func closeFile(f *os.File) {
	if f != nil {
		f.Close()
	}
}

// waitLock waits in the kernel for the lock, on a file of its own: a wait
// given up (timeout, ctx) cannot be interrupted, so its goroutine lets the
// lock go and closes the file whenever it gets it.
func waitLock(ctx context.Context, lock ownfile.File, timeout time.Duration) (*os.File, error) {
	f, err := open(lock)
	if err != nil {
		return nil, err
	}
	got := make(chan error, 1)
	var mu sync.Mutex
	abandoned := false
	go func() {
		err := lockBlocking(f)
		mu.Lock()
		defer mu.Unlock()
		if abandoned {
			if err == nil {
				unlock(f)
			}
			f.Close()
			return
		}
		got <- err
	}()
	timer := clock.Real{}.NewTimer(timeout) // another process lets go in real time, whatever "now" is
	defer timer.Stop()
	defer waitNoted(ctx, lock)()
	select {
	case err := <-got:
		return f, err
	case <-ctx.Done():
	case <-timer.C():
	}
	mu.Lock()
	defer mu.Unlock()
	select {
	case err := <-got: // it arrived as the wait ended: keep it
		if err == nil && ctx.Err() == nil {
			return f, nil
		}
		if err == nil {
			unlock(f)
		}
		f.Close()
		return nil, firstErr(ctx.Err(), errWouldBlock)
	default:
		abandoned = true
		return nil, firstErr(ctx.Err(), errWouldBlock)
	}
}

func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// pollLock tries to lock f until timeout: for the short grace a look at
// the lock is given, where waiting in the kernel would not be shorter.
func pollLock(ctx context.Context, f *os.File, timeout time.Duration) error {
	waitCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for wait := time.Millisecond; ; wait = min(wait*2, 20*time.Millisecond) {
		err := tryLock(f)
		if !errors.Is(err, errWouldBlock) {
			return err
		}
		select {
		case <-waitCtx.Done():
			return err
		case <-clock.Real{}.After(wait): // another process lets go in real time, whatever "now" is
		}
	}
}

// writeNote writes the holder note into the held lock file, whole in one
// write; a reader catching the instant before it sees no note. The note
// is advisory: a failure to write it must not fail the lock.
func writeNote(f *os.File, who Holder) {
	note, _ := json.Marshal(who)
	_ = f.Truncate(0)
	_, _ = f.WriteAt(note, 0)
}

// Release drops the lock. The lock file stays (removing it would race with
// a process that has it open); the note is cleared.
func (l *Lock) Release() error {
	if l == nil || l.f == nil {
		return nil
	}
	_ = l.f.Truncate(0)
	err := unlock(l.f)
	if cerr := l.f.Close(); err == nil {
		err = cerr
	}
	l.f = nil
	return err
}

// ReadHolder returns the note of whoever holds the lock, if any.
func ReadHolder(lock ownfile.File) *Holder {
	b, _, err := lock.ReadFile(maxNote)
	if err != nil || len(b) == 0 {
		return nil
	}
	var h Holder
	if json.Unmarshal(b, &h) != nil {
		return nil
	}
	return &h
}

var errWouldBlock = errors.New("lock is held")

// beatClock paces the lines a wait writes (a test's fake clock drives it).
var beatClock clock.Clock = clock.Real{}

// waitNoted has a wait for the lock say, to the context's progress
// listener, what it waits for and who holds it, at progress.Every; the
// returned func ends it.
func waitNoted(ctx context.Context, lock ownfile.File) (stop func()) {
	path := lock.Path()
	return progress.Beat(ctx, beatClock, func(waited time.Duration) string {
		who := "another sbf process"
		if h := ReadHolder(lock); h != nil {
			who = fmt.Sprintf("%q (pid %d, since %s)", h.Command, h.PID, h.Since.UTC().Format(time.RFC3339))
		}
		return fmt.Sprintf("waiting for the lock %s, held by %s (%s so far)", path, who, waited)
	})
}

// Coded is the error's STATE_LOCKED form, naming the holder.
func (e *LockedError) Coded() *coded.Error {
	return coded.New(coded.StateLocked, map[string]any{"path": e.Path, "holder": e.Holder}, "%s", e.Error())
}

// Holding reports who holds the lock without writing anything of
// its own: nil when nobody does (or the lock file does not exist). A lock
// without a note is free (a holder writes one the moment it has the lock),
// so a look mostly never touches the lock; a note is checked by taking the
// lock for an instant, and one a dead holder left is cleared then.
func Holding(lock ownfile.File) *Holder {
	h := ReadHolder(lock)
	if h == nil {
		return nil
	}
	f, err := lock.OpenFile(os.O_RDWR, 0)
	if err != nil {
		return nil
	}
	defer f.Close()
	if err := tryLock(f); err == nil {
		_ = f.Truncate(0) // its holder died holding it
		unlock(f)
		return nil
	}
	return h
}

// WaitFree waits up to timeout until nobody holds the lock, without taking
// it, and returns who still holds it then (nil: free).
func WaitFree(ctx context.Context, lock ownfile.File, timeout time.Duration) *Holder {
	waitCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	defer waitNoted(ctx, lock)()
	for wait := 5 * time.Millisecond; ; wait = min(wait*2, 250*time.Millisecond) {
		who := Holding(lock)
		if who == nil {
			return nil
		}
		select {
		case <-waitCtx.Done():
			return who
		case <-clock.Real{}.After(wait): // another process lets go in real time
		}
	}
}
