// Package flock serialises sbf processes with OS file locks. Next to each
// lock file it keeps a small JSON note naming the holder, so a waiting
// process can say who it waits for.
package flock

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/sandboxforge/sbf/internal/clock"
	"github.com/sandboxforge/sbf/internal/coded"
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

// peekGrace is how long Acquire keeps trying past its timeout when the lock
// is held without a note: Holding takes the lock for a look, and a look
// must not make a run that tries once fail.
const peekGrace = 100 * time.Millisecond

// Acquire takes the lock at path, retrying until timeout (zero: try once;
// a holder without a note is given peekGrace). The holder note is written
// to path+".info" once the lock is held.
func Acquire(ctx context.Context, path string, who Holder, timeout time.Duration) (*Lock, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("opening lock %s: %w", path, err)
	}
	err = lockWithin(ctx, f, timeout)
	var holder *Holder
	if errors.Is(err, errWouldBlock) {
		if holder = ReadHolder(path); holder == nil { // no note: likely a Holding look, over in microseconds
			err = lockWithin(ctx, f, peekGrace)
			holder = ReadHolder(path)
		}
	}
	switch {
	case err == nil:
	case errors.Is(err, errWouldBlock) && ctx.Err() == nil:
		f.Close()
		return nil, &LockedError{Path: path, Holder: holder}
	case ctx.Err() != nil:
		f.Close()
		return nil, ctx.Err()
	default:
		f.Close()
		return nil, fmt.Errorf("locking %s: %w", path, err)
	}
	writeNote(path+".info", who)
	return &Lock{f: f, path: path}, nil
}

// lockWithin tries to lock f until timeout (zero: once); errWouldBlock
// says another holder kept it.
func lockWithin(ctx context.Context, f *os.File, timeout time.Duration) error {
	waitCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for wait := 5 * time.Millisecond; ; wait = min(wait*2, 250*time.Millisecond) {
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

// writeNote writes the holder note whole (a temporary file renamed over
// it), so a waiting process never reads half of one. The note is
// advisory: a failure to write it must not fail the lock.
func writeNote(path string, who Holder) {
	note, _ := json.Marshal(who)
	tmp := fmt.Sprintf("%s.%d.tmp", path, os.Getpid())
	if err := os.WriteFile(tmp, note, 0o644); err != nil {
		return
	}
	if err := os.Rename(tmp, path); err != nil {
		_ = os.Remove(tmp)
	}
}

// Release drops the lock. The lock file stays (removing it would race with
// a process that has it open); the note is cleared.
func (l *Lock) Release() error {
	if l == nil || l.f == nil {
		return nil
	}
	_ = os.Remove(l.path + ".info")
	err := unlock(l.f)
	if cerr := l.f.Close(); err == nil {
		err = cerr
	}
	l.f = nil
	return err
}

// ReadHolder returns the note of whoever holds path, if any.
func ReadHolder(path string) *Holder {
	b, err := os.ReadFile(path + ".info")
	if err != nil {
		return nil
	}
	var h Holder
	if json.Unmarshal(b, &h) != nil {
		return nil
	}
	return &h
}

var errWouldBlock = errors.New("lock is held")

// Coded is the error's STATE_LOCKED form, naming the holder.
func (e *LockedError) Coded() *coded.Error {
	return coded.New(coded.StateLocked, map[string]any{"path": e.Path, "holder": e.Holder}, "%s", e.Error())
}

// Holding reports who holds the lock at path, without taking it for
// longer than a look and without writing anything: nil when nobody does
// (or the lock file does not exist).
func Holding(path string) *Holder {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil
	}
	defer f.Close()
	if err := tryLock(f); err == nil {
		unlock(f)
		return nil
	}
	if h := ReadHolder(path); h != nil {
		return h
	}
	return &Holder{Command: "another sbf process"}
}

// WaitFree waits up to timeout until nobody holds the lock at path, without
// taking it, and returns who still holds it then (nil: free).
func WaitFree(ctx context.Context, path string, timeout time.Duration) *Holder {
	waitCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for wait := 5 * time.Millisecond; ; wait = min(wait*2, 250*time.Millisecond) {
		who := Holding(path)
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
